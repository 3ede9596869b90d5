//! Plain HTTP from synchronous test code, through the same hyper client the async harnesses
//! use: one request, on a thread and runtime of its own (so it may be called from anywhere,
//! inside a runtime too), never following redirects.

use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::Value;

/// An answer: status, headers and the whole body.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON (`null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header's value, when present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// `method url` with `headers` and `body`: the answer, or why none came (refused, reset).
pub fn send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Result<Answer, SendError> {
    let mut request = Request::builder()
        .method(Method::from_bytes(method.as_bytes())?)
        .uri(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body.unwrap_or_default())))?;
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async move {
            let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
            let response = client.request(request).await?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await.map_err(SendError::Body)?.to_bytes();
            Ok(Answer {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body: body.to_vec(),
            })
        })
    })
    .join()
    .map_err(|_| SendError::Panicked)?
}

/// Why [`send`] got no answer.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// Not a method.
    #[error("invalid method: {0}")]
    Method(#[from] http::method::InvalidMethod),
    /// The request could not be built (a bad URL or header).
    #[error("invalid request: {0}")]
    Request(#[from] http::Error),
    /// No runtime for the request's thread.
    #[error("no runtime: {0}")]
    Runtime(#[from] std::io::Error),
    /// Refused, reset, or timed out.
    #[error("{0}")]
    Transport(#[from] hyper_util::client::legacy::Error),
    /// The body broke off.
    #[error("reading the body: {0}")]
    Body(hyper::Error),
    /// The request's thread panicked.
    #[error("the request's thread panicked")]
    Panicked,
}

/// `GET url`: the answer, which must come.
pub fn get(url: &str, headers: &[(&str, &str)]) -> Answer {
    send("GET", url, headers, None).unwrap_or_else(|e| panic!("{url}: {e}"))
}
