//! An upstream that echoes what it received, served over plain HTTP or TLS, counting requests.
//!
//! Request headers steer it: `x-echo-status` sets the status, `x-echo-delay-ms` delays the
//! answer, `x-echo-request-id` makes it answer with its own `X-Request-Id`, `x-echo-quiet`
//! makes it answer a fixed `{"ok":true}` (a destination that does not echo). The body of the
//! last request is kept either way.

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;

/// A running upstream.
#[derive(Debug)]
pub struct Upstream {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Requests received so far.
    pub hits: Arc<AtomicUsize>,
    last: Arc<std::sync::Mutex<String>>,
}

/// A throwaway CA and a `localhost` certificate it signed.
#[derive(Debug)]
pub struct TestPki {
    /// The CA certificate, PEM (for `--destination-ca-file`).
    pub ca_pem: String,
    /// A server configuration presenting the `localhost` certificate.
    pub server: Arc<rustls::ServerConfig>,
}

impl Default for TestPki {
    fn default() -> Self {
        Self::new()
    }
}

impl TestPki {
    /// A fresh CA and leaf.
    pub fn new() -> Self {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
        let ca_key = KeyPair::generate().expect("ca key");
        let mut ca_params = CertificateParams::new(vec![]).expect("ca params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).expect("ca cert");
        let leaf_key = KeyPair::generate().expect("leaf key");
        let leaf = CertificateParams::new(vec!["localhost".to_string()])
            .expect("leaf params")
            .signed_by(&leaf_key, &ca, &ca_key)
            .expect("leaf cert");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der())
                    .expect("key der"),
            )
            .expect("server config");
        Self {
            ca_pem: ca.pem(),
            server: Arc::new(server),
        }
    }
}

async fn echo(
    req: Request<Incoming>,
    hits: Arc<AtomicUsize>,
    last: Arc<std::sync::Mutex<String>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    hits.fetch_add(1, Ordering::SeqCst);
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    if let Ok(mut kept) = last.lock() {
        *kept = String::from_utf8_lossy(&body).into_owned();
    }
    let mut headers = Map::new();
    for (name, value) in &parts.headers {
        headers.insert(
            name.as_str().to_string(),
            json!(value.to_str().unwrap_or("<binary>")),
        );
    }
    if let Some(ms) = parts
        .headers
        .get("x-echo-delay-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
    {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let status = parts
        .headers
        .get("x-echo-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u16>().ok())
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::OK);
    let echoed = json!({
        "method": parts.method.as_str(),
        "path": parts.uri.path(),
        "query": parts.uri.query(),
        "headers": Value::Object(headers),
        "body": String::from_utf8_lossy(&body),
        "version": format!("{:?}", parts.version),
    });
    let answer = if parts.headers.contains_key("x-echo-quiet") {
        json!({"ok": true})
    } else {
        echoed
    };
    let mut res = Response::new(Full::new(Bytes::from(answer.to_string())));
    *res.status_mut() = status;
    res.headers_mut()
        .insert("content-type", "application/json".parse().expect("ct"));
    res.headers_mut()
        .insert("connection", "keep-alive".parse().expect("hop"));
    if parts.headers.contains_key("x-echo-request-id") {
        res.headers_mut()
            .insert("x-request-id", "upstream-id".parse().expect("id"));
    }
    Ok(res)
}

impl Upstream {
    /// Starts on an ephemeral port; TLS when `pki` is given.
    pub async fn start(pki: Option<&TestPki>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let hits = Arc::new(AtomicUsize::new(0));
        let acceptor = pki.map(|p| tokio_rustls::TlsAcceptor::from(p.server.clone()));
        let counter = hits.clone();
        let last = Arc::new(std::sync::Mutex::new(String::new()));
        let kept = last.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let hits = counter.clone();
                let acceptor = acceptor.clone();
                let kept = kept.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| echo(req, hits.clone(), kept.clone()));
                    let builder = auto::Builder::new(TokioExecutor::new());
                    match acceptor {
                        Some(acceptor) => {
                            if let Ok(tls) = acceptor.accept(stream).await {
                                let _ = builder.serve_connection(TokioIo::new(tls), service).await;
                            }
                        }
                        None => {
                            let _ = builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                });
            }
        });
        Self { addr, hits, last }
    }

    /// Requests received so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// The body of the last request received.
    pub fn last_body(&self) -> String {
        self.last.lock().map(|b| b.clone()).unwrap_or_default()
    }
}
