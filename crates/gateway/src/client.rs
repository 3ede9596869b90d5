//! The outbound client: hyper-util's pooled client over rustls, with the SSRF guard
//! ([`crate::ssrf`]) in its resolver so that the address that was checked is the address that
//! is dialled.

use std::{path::PathBuf, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::{TokioExecutor, TokioTimer},
};
use rustls::{
    pki_types::{pem::PemObject, CertificateDer},
    RootCertStore,
};

// Re-exported where it was first defined, so `tessera_gateway::client::SendError` still names it.
pub use crate::send_error::SendError;
use crate::ssrf::{self, GuardedResolver};

/// How the client reaches destinations.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Allow private, loopback and link-local destinations (and plain `http`).
    pub allow_private_destinations: bool,
    /// An extra trusted CA (PEM), for private PKI and tests.
    pub extra_ca_file: Option<PathBuf>,
    /// Limit on establishing a TCP connection.
    pub connect_timeout: Duration,
    /// Limit from the start of the request until the response headers arrive.
    pub destination_timeout: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            allow_private_destinations: false,
            extra_ca_file: None,
            connect_timeout: Duration::from_secs(5),
            destination_timeout: Duration::from_secs(25),
        }
    }
}

/// The client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientBuildError {
    /// The CA file could not be read or holds no certificate.
    #[error("cannot use the destination CA file {path}: {reason}")]
    CaFile {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Tls(String),
}

type Connector = HttpsConnector<HttpConnector<GuardedResolver>>;

/// A pooled, keep-alive client for destinations.
#[derive(Clone)]
pub struct OutboundClient {
    client: Client<Connector, Full<Bytes>>,
    config: Arc<ClientConfig>,
}

impl std::fmt::Debug for OutboundClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundClient")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn root_store(extra_ca: Option<&PathBuf>) -> Result<RootCertStore, ClientBuildError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = extra_ca {
        let fail = |reason: String| ClientBuildError::CaFile {
            path: path.display().to_string(),
            reason,
        };
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .map_err(|e| fail(e.to_string()))?
            .collect::<Result<_, _>>()
            .map_err(|e| fail(e.to_string()))?;
        if certs.is_empty() {
            return Err(fail("no PEM certificate found".into()));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| fail(e.to_string()))?;
        }
    }
    Ok(roots)
}

impl OutboundClient {
    /// Builds the client: webpki roots plus the optional extra CA, HTTP/1.1 and HTTP/2 (ALPN),
    /// `Host`/SNI from the destination URI.
    pub fn new(config: ClientConfig) -> Result<Self, ClientBuildError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientBuildError::Tls(e.to_string()))?
            .with_root_certificates(root_store(config.extra_ca_file.as_ref())?)
            .with_no_client_auth();
        let mut http = HttpConnector::new_with_resolver(GuardedResolver::new(
            config.allow_private_destinations,
        ));
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(config.connect_timeout));
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(256)
            .build(connector);
        Ok(Self {
            client,
            config: Arc::new(config),
        })
    }

    /// Sends `req`, waiting at most the destination timeout for the response headers.
    pub async fn send(&self, req: Request<Full<Bytes>>) -> Result<Response<Incoming>, SendError> {
        ssrf::check_literal(req.uri(), self.config.allow_private_destinations)?;
        match tokio::time::timeout(self.config.destination_timeout, self.client.request(req)).await
        {
            Err(_) => Err(SendError::Timeout),
            Ok(Ok(res)) => Ok(res),
            Ok(Err(e)) => {
                if ssrf::is_blocked(&e) {
                    Err(SendError::Blocked)
                } else {
                    Err(SendError::Unreachable(describe(&e)))
                }
            }
        }
    }
}

/// The innermost useful message of an error chain (connection refused, TLS failure, …).
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut current = e.source();
    while let Some(err) = current {
        parts.push(err.to_string());
        current = err.source();
    }
    parts.dedup();
    parts.join(": ")
}
