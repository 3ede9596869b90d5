//! TLS to PostgreSQL with libpq's meanings of `sslmode` (docs/operations.md, "TLS to the
//! database"): the rustls client configuration each mode asks for.
//!
//! | `sslmode` | encrypted | certificate chain checked | host name checked |
//! |---|---|---|---|
//! | `disable` | no | – | – |
//! | `prefer` (the default) | when the server offers it | no | no |
//! | `require` | yes | only when `sslrootcert` is given (libpq's rule) | no |
//! | `verify-ca` | yes | yes | no |
//! | `verify-full` | yes | yes | yes |
//!
//! The roots are `sslrootcert`'s PEM file, or the system's (`sslrootcert=system`, or none
//! given).

use std::{path::PathBuf, sync::Arc};

use rustls::{
    client::{
        danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
        WebPkiServerVerifier,
    },
    crypto::CryptoProvider,
    pki_types::{pem::PemObject, CertificateDer, ServerName, UnixTime},
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Never encrypt.
    Disable,
    /// Encrypt when the server offers it; the certificate is not checked.
    Prefer,
    /// Always encrypt; the certificate is checked only against a given `sslrootcert`.
    Require,
    /// Always encrypt and check the certificate's chain, not its host name.
    VerifyCa,
    /// Always encrypt and check the chain and that the certificate names the host.
    VerifyFull,
}

impl SslMode {
    /// The mode named `value` in a URL, as libpq spells it.
    pub fn parse(value: &str) -> Result<Self, TlsError> {
        Ok(match value {
            "disable" => Self::Disable,
            // libpq's `allow` tries plain first; encrypting when offered is the safer reading.
            "allow" | "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => return Err(TlsError::Mode(other.to_string())),
        })
    }

    /// The mode as libpq spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

/// Where the certificate authorities come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCerts {
    /// The operating system's store (`sslrootcert=system`, or no `sslrootcert`).
    System,
    /// A PEM file of CA certificates (`sslrootcert=PATH`).
    File(PathBuf),
}

/// A TLS setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// An `sslmode` libpq does not define.
    #[error("sslmode={0} is not one of disable, allow, prefer, require, verify-ca, verify-full")]
    Mode(String),
    /// A libpq TLS parameter Tessera does not implement.
    #[error("{0} is not supported (client certificates are not offered); remove it from the URL")]
    Unsupported(String),
    /// The `sslrootcert` file cannot be read or holds no certificate.
    #[error("sslrootcert {path}: {reason}")]
    RootFile {
        /// The file named.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The system's store holds no usable certificate.
    #[error("no CA certificates in the system's store (give sslrootcert=PATH): {0}")]
    SystemRoots(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// The rustls client configuration for `mode` with `roots` (unused under `disable`).
pub fn client_config(mode: SslMode, roots: Option<&RootCerts>) -> Result<ClientConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = verifier(mode, roots, provider.clone())?;
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// What checks the server's certificate under `mode`.
fn verifier(
    mode: SslMode,
    roots: Option<&RootCerts>,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, TlsError> {
    let checks_chain = match mode {
        SslMode::VerifyCa | SslMode::VerifyFull => true,
        SslMode::Require => roots.is_some(),
        SslMode::Disable | SslMode::Prefer => false,
    };
    if !checks_chain {
        return Ok(Arc::new(Relaxed {
            chain: None,
            provider,
        }));
    }
    let store = root_store(roots.unwrap_or(&RootCerts::System))?;
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
        .build()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    Ok(if mode == SslMode::VerifyFull {
        webpki
    } else {
        Arc::new(Relaxed {
            chain: Some(webpki),
            provider,
        })
    })
}

/// The CA certificates `roots` names.
fn root_store(roots: &RootCerts) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    match roots {
        RootCerts::File(path) => {
            let failed = |reason: String| TlsError::RootFile {
                path: path.clone(),
                reason,
            };
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| failed(e.to_string()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| failed(e.to_string()))?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err(failed("holds no usable CA certificate".into()));
            }
        }
        RootCerts::System => {
            let loaded = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(loaded.certs);
            if added == 0 {
                let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
                return Err(TlsError::SystemRoots(errors.join("; ")));
            }
        }
    }
    Ok(store)
}

/// The verifier of every mode short of `verify-full`: `verify-ca` (and `require` with
/// `sslrootcert`) checks that the chain leads to a given root and lets the certificate name any
/// host; `prefer` and `require` without `sslrootcert` check no certificate (libpq's meaning).
/// The handshake's signatures are checked either way, with rustls's own functions.
#[derive(Debug)]
struct Relaxed {
    /// The chain check, when the mode has one.
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Relaxed {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

    use super::*;

    struct Pki {
        ca_file: tempfile::NamedTempFile,
        leaf: CertificateDer<'static>,
    }

    /// A CA and a server certificate it signed for `db.test`.
    fn make_pki() -> Pki {
        let ca_key = KeyPair::generate().expect("key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).expect("ca");
        let leaf_key = KeyPair::generate().expect("key");
        let leaf = CertificateParams::new(vec!["db.test".to_string()])
            .expect("params")
            .signed_by(&leaf_key, &ca, &ca_key)
            .expect("leaf");
        let ca_file = tempfile::NamedTempFile::new().expect("file");
        std::fs::write(ca_file.path(), ca.pem()).expect("write");
        Pki {
            ca_file,
            leaf: leaf.der().clone(),
        }
    }

    fn verdict(mode: SslMode, roots: Option<&RootCerts>, pki: &Pki, host: &str) -> bool {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        // A configuration that cannot be built (no system roots) refuses too.
        let Ok(verifier) = super::verifier(mode, roots, provider) else {
            return false;
        };
        let name = ServerName::try_from(host.to_string()).expect("name");
        verifier
            .verify_server_cert(&pki.leaf, &[], &name, &[], UnixTime::now())
            .is_ok()
    }

    #[test]
    fn each_mode_checks_what_libpq_checks() {
        let pki = make_pki();
        let wrong = make_pki();
        let right_ca = RootCerts::File(pki.ca_file.path().to_path_buf());
        let wrong_ca = RootCerts::File(wrong.ca_file.path().to_path_buf());
        // verify-full: the chain and the name.
        assert!(verdict(
            SslMode::VerifyFull,
            Some(&right_ca),
            &pki,
            "db.test"
        ));
        assert!(!verdict(
            SslMode::VerifyFull,
            Some(&right_ca),
            &pki,
            "other.test"
        ));
        assert!(!verdict(
            SslMode::VerifyFull,
            Some(&wrong_ca),
            &pki,
            "db.test"
        ));
        // verify-ca: the chain only.
        assert!(verdict(
            SslMode::VerifyCa,
            Some(&right_ca),
            &pki,
            "other.test"
        ));
        assert!(!verdict(
            SslMode::VerifyCa,
            Some(&wrong_ca),
            &pki,
            "db.test"
        ));
        // require: encrypted, unchecked, unless a root file is given.
        assert!(verdict(SslMode::Require, None, &pki, "other.test"));
        assert!(!verdict(SslMode::Require, Some(&wrong_ca), &pki, "db.test"));
        assert!(verdict(
            SslMode::Require,
            Some(&right_ca),
            &pki,
            "other.test"
        ));
        assert!(verdict(SslMode::Prefer, None, &pki, "other.test"));
        // The system's store does not know a private CA.
        assert!(!verdict(SslMode::VerifyFull, None, &pki, "db.test"));
    }

    #[test]
    fn modes_and_root_files_are_checked() {
        for (value, mode) in [
            ("disable", SslMode::Disable),
            ("prefer", SslMode::Prefer),
            ("require", SslMode::Require),
            ("verify-ca", SslMode::VerifyCa),
            ("verify-full", SslMode::VerifyFull),
        ] {
            assert_eq!(SslMode::parse(value).expect(value), mode);
            assert_eq!(mode.as_str(), value);
        }
        assert!(matches!(SslMode::parse("verify"), Err(TlsError::Mode(_))));
        let missing = RootCerts::File("/nonexistent/ca.pem".into());
        let error = client_config(SslMode::VerifyFull, Some(&missing)).expect_err("missing");
        assert!(error.to_string().contains("/nonexistent/ca.pem"), "{error}");
        let empty = tempfile::NamedTempFile::new().expect("file");
        let blank = RootCerts::File(empty.path().to_path_buf());
        let error = client_config(SslMode::VerifyCa, Some(&blank)).expect_err("empty");
        assert!(error.to_string().contains("no usable CA"), "{error}");
    }
}
