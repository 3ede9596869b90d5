//! The server's `POST /tokenize`, as the import calls it: one batch a request, with the
//! import's API key, over HTTP or HTTPS (the system of the web's roots, or a CA file).

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use http::{header, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::TokioExecutor,
};
use serde_json::Value;

use crate::ImportError;

/// How long one batch may take before it is tried again.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The import's connection to the server.
#[derive(Clone)]
pub(crate) struct Server {
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    tokenize: Uri,
    key_header: HeaderName,
    key: HeaderValue,
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
    /// The server at `base` (`http://127.0.0.1:8080`), sending `key` in `<prefix>-API-KEY`.
    pub(crate) fn new(base: &url::Url, prefix: &str, key: &str) -> Result<Self, ImportError> {
        let tokenize = base
            .join("tokenize")
            .map_err(|e| ImportError::Config(format!("the server URL: {e}")))?;
        let tokenize: Uri = tokenize
            .as_str()
            .parse()
            .map_err(|e| ImportError::Config(format!("the server URL: {e}")))?;
        let key_header = HeaderName::try_from(format!("{prefix}-API-KEY"))
            .map_err(|_| ImportError::Config("the header prefix is not a header name".into()))?;
        let mut key = HeaderValue::try_from(key)
            .map_err(|_| ImportError::Config("the API key is not a header value".into()))?;
        key.set_sensitive(true);
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
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
        })
    }

    /// Sends one batch (a JSON array of create requests): the status and the JSON answer
    /// (`null` when it is none), or why no answer came.
    pub(crate) async fn tokenize(&self, body: Vec<u8>) -> Result<(StatusCode, Value), String> {
        let request = Request::builder()
            .method(Method::POST)
            .uri(self.tokenize.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(&self.key_header, self.key.clone())
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, async {
            let response = self
                .http
                .request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok::<_, String>((
                status,
                serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            ))
        })
        .await;
        answer.map_err(|_| "the server did not answer in time".to_string())?
    }
}
