//! The server's `POST /tokenize`, as the import calls it: one batch a request, with the
//! import's API key, over HTTP or HTTPS (the web's roots, and a CA file for a private CA).

use std::{
    path::Path,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use bytes::Bytes;
use http::{header, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::Limited;
use http_body_util::{BodyExt, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::TokioExecutor,
};
use rustls::pki_types::{pem::PemObject, CertificateDer};
use serde_json::Value;

use crate::error::ImportError;

/// How long one batch may take before it is tried again.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest answer read: `/tokenize` answers 100 tokens in far less, so more is not the
/// server the import expects.
const MAX_ANSWER_BYTES: usize = 16 << 20;

/// The import's connection to the server.
#[derive(Clone)]
pub(crate) struct Server {
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    tokenize: Uri,
    key_header: HeaderName,
    key: HeaderValue,
    /// This run's idempotency keys: its random prefix, and how many batches it has sent.
    run: Arc<(String, AtomicU64)>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: never printed.
        f.debug_struct("Server")
            .field("tokenize", &self.tokenize)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// The server at `base` (`http://127.0.0.1:8080`, or under a path:
    /// `https://vault.internal/api` calls `https://vault.internal/api/tokenize`), sending `key`
    /// in `<prefix>-API-KEY`, trusting the web's roots and those of `ca_file`.
    pub(crate) fn new(
        base: &url::Url,
        prefix: &str,
        key: &str,
        ca_file: Option<&Path>,
    ) -> Result<Self, ImportError> {
        let tokenize = tokenize_url(base)?;
        let key_header = HeaderName::try_from(format!("{prefix}-API-KEY"))
            .map_err(|_| ImportError::Config("the header prefix is not a header name".into()))?;
        let mut key = HeaderValue::try_from(key)
            .map_err(|_| ImportError::Config("the API key is not a header value".into()))?;
        key.set_sensitive(true);
        let roots = root_store(ca_file)?;
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| ImportError::Config(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            http: Client::builder(TokioExecutor::new()).build(connector),
            tokenize,
            key_header,
            key,
            run: Arc::new((uuid::Uuid::new_v4().simple().to_string(), AtomicU64::new(0))),
        })
    }

    /// A new `Idempotency-Key` for a batch: this run's prefix and the batch's number, so that
    /// a retry is answered with what the first attempt stored, and no two batches (nor two
    /// runs) share one.
    pub(crate) fn next_idempotency_key(&self) -> HeaderValue {
        let n = self.run.1.fetch_add(1, Ordering::Relaxed);
        let key = format!("tessera-import-{}-{n}", self.run.0);
        HeaderValue::try_from(key).unwrap_or_else(|_| HeaderValue::from_static("tessera-import"))
    }

    /// Sends one batch (a JSON array of create requests): the status and the JSON answer
    /// (`null` when it is none), or why no answer came.
    pub(crate) async fn tokenize(
        &self,
        body: Vec<u8>,
        idempotency_key: Option<&HeaderValue>,
    ) -> Result<(StatusCode, Value), NoAnswer> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(self.tokenize.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(&self.key_header, self.key.clone());
        if let Some(key) = idempotency_key {
            request = request.header("idempotency-key", key.clone());
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| NoAnswer::Transient(e.to_string()))?;
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, async {
            let response = self.http.request(request).await.map_err(|e| {
                if refused_by_tls(&e) {
                    NoAnswer::Tls(error_chain(&e))
                } else {
                    NoAnswer::Transient(error_chain(&e))
                }
            })?;
            let status = response.status();
            let bytes = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|e| NoAnswer::Transient(format!("reading the answer: {e}")))?
                .to_bytes();
            Ok::<_, NoAnswer>((
                status,
                serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            ))
        })
        .await;
        answer.map_err(|_| NoAnswer::Transient("the server did not answer in time".into()))?
    }
}

/// Why a batch got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoAnswer {
    /// Worth trying again: the server was unreachable, slow, or closed the connection.
    Transient(String),
    /// TLS refused the server (its certificate, or the handshake): trying again cannot help.
    Tls(String),
}

/// Whether TLS refused the connection: a `rustls` error anywhere in `e`'s sources.
fn refused_by_tls(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if e.downcast_ref::<rustls::Error>().is_some() {
            return true;
        }
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            if refused_by_tls(inner) {
                return true;
            }
        }
        next = e.source();
    }
    false
}

/// `e` and its sources, joined: hyper's own message alone rarely says what failed.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}

/// `base`'s `tokenize`, keeping every segment of its path (`/api` and `/api/` alike).
fn tokenize_url(base: &url::Url) -> Result<Uri, ImportError> {
    if base.cannot_be_a_base() || !matches!(base.scheme(), "http" | "https") {
        return Err(ImportError::Config(
            "the server URL must be http:// or https://".into(),
        ));
    }
    if base.query().is_some() || base.fragment().is_some() {
        return Err(ImportError::Config(
            "the server URL must have no query or fragment".into(),
        ));
    }
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|()| ImportError::Config("the server URL cannot take a path".into()))?
        .pop_if_empty()
        .push("tokenize");
    url.as_str()
        .parse()
        .map_err(|e| ImportError::Config(format!("the server URL: {e}")))
}

/// The web's roots, and every certificate of `ca_file` (PEM).
fn root_store(ca_file: Option<&Path>) -> Result<rustls::RootCertStore, ImportError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let Some(path) = ca_file else {
        return Ok(roots);
    };
    let fail = |reason: String| ImportError::Config(format!("{}: {reason}", path.display()));
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
    Ok(roots)
}

/// Whether the API key would cross a network in clear: `http://` to a host other than this
/// machine.
pub(crate) fn sends_key_in_clear(base: &url::Url) -> bool {
    let local = match base.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    base.scheme() == "http" && !local
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize_keeps_the_base_path() {
        for (base, expected) in [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/tokenize"),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/tokenize"),
            (
                "https://vault.internal/api",
                "https://vault.internal/api/tokenize",
            ),
            (
                "https://vault.internal/api/",
                "https://vault.internal/api/tokenize",
            ),
        ] {
            let url: url::Url = base.parse().expect("url");
            assert_eq!(tokenize_url(&url).expect(base).to_string(), expected);
        }
        for bad in ["ftp://x/", "http://x/?a=1", "mailto:a@b"] {
            let url: url::Url = bad.parse().expect("url");
            assert!(tokenize_url(&url).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_key_in_clear_is_noticed() {
        for (base, clear) in [
            ("http://127.0.0.1:8080", false),
            ("http://localhost:8080", false),
            ("http://[::1]:8080", false),
            ("https://vault.internal", false),
            ("http://vault.internal", true),
            ("http://10.0.0.5:8080", true),
        ] {
            let url: url::Url = base.parse().expect("url");
            assert_eq!(sends_key_in_clear(&url), clear, "{base}");
        }
    }

    #[test]
    fn a_ca_file_must_hold_a_certificate() {
        let dir = tempfile::tempdir().expect("dir");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate").expect("write");
        assert!(root_store(Some(&empty)).is_err());
        assert!(root_store(Some(&dir.path().join("missing.pem"))).is_err());
        assert!(root_store(None).is_ok());
    }
}
