//! "Try it": a test request sent through the real gateway path — an HTTP request to the
//! gateway's `/proxy` (by default this `api` process's own, over loopback), carrying the proxy's
//! key and the signed-in application's API key in headers from the server-side session. The
//! browser never holds either key; the gateway detokenizes, runs the transforms, records
//! `token.detokenized` and calls the destination exactly as for any caller.
//!
//! The URL is fixed by the operator (`--console-gateway-url`, or this process's listen
//! address): a user chooses only the method, the path suffix, the body and ordinary headers,
//! never where the request goes or its `SVC-*` headers.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::TokioExecutor,
};
use tessera_domain::{Secret, ValidationErrors};

use crate::form::Form;

/// Longest answer read from the gateway; the page shows at most [`SHOWN_BODY_BYTES`].
const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Most of the answer's body shown on the page.
pub(crate) const SHOWN_BODY_BYTES: usize = 64 * 1024;
/// How long the whole exchange may take (the gateway's own destination timeout is 25 s).
const TIMEOUT: Duration = Duration::from_secs(40);

/// What the first body holds where a token's expression goes; "Insert" replaces it.
pub(crate) const PLACEHOLDER: &str = "{{ TOKEN_ID }}";

/// The methods "Try it" offers.
pub(crate) const METHODS: [&str; 5] = ["POST", "GET", "PUT", "PATCH", "DELETE"];

/// A client of one gateway.
pub(crate) struct GatewayClient {
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// The test request, as the form gave it.
#[derive(Debug, Default)]
pub(crate) struct TryRequest {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) content_type: String,
    /// `Name: value` lines; a secret, since they may carry credentials.
    pub(crate) headers: Secret<String>,
    pub(crate) body: Secret<String>,
}

/// What came back.
#[derive(Debug)]
pub(crate) struct TryResponse {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
    pub(crate) truncated: bool,
}

impl TryResponse {
    /// `SVC-PROXY-DESTINATION-STATUS`: the destination's status (absent when the gateway
    /// answered by itself, with a `proxy_error`).
    pub(crate) fn destination_status(&self) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == "svc-proxy-destination-status")
            .map(|(_, v)| v.as_str())
    }
}

impl TryRequest {
    /// Reads the form.
    pub(crate) fn read(form: &Form) -> Self {
        Self {
            method: form.get("method").to_string(),
            path: form.get("path").trim().to_string(),
            content_type: form.get("content_type").trim().to_string(),
            headers: Secret::new(form.get("headers").to_string()),
            body: Secret::new(form.get("body").to_string()),
        }
    }

    /// A first request for a proxy: a JSON POST to its destination.
    pub(crate) fn example() -> Self {
        Self {
            method: "POST".into(),
            content_type: "application/json".into(),
            body: Secret::new(format!("{{\n  \"card\": \"{PLACEHOLDER}\"\n}}")),
            ..Self::default()
        }
    }

    /// The request to send, or the form's problems.
    fn build(
        &self,
        base: &str,
        proxy_key: &str,
        api_key: &str,
    ) -> Result<Request<Full<Bytes>>, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let method = match METHODS.contains(&self.method.as_str()) {
            true => Method::from_bytes(self.method.as_bytes()).ok(),
            false => None,
        };
        if method.is_none() {
            errors.add("method", format!("must be one of {}", METHODS.join(", ")));
        }
        let path_ok = (self.path.is_empty() || self.path.starts_with('/'))
            && self.path.len() <= 2000
            && !self.path.contains('#')
            && self.path.bytes().all(|b| b.is_ascii_graphic());
        if !path_ok {
            errors.add(
                "path",
                "must be empty or start with `/`, with no spaces or `#` (it is appended to /proxy)",
            );
        }
        let mut builder = Request::builder()
            .uri(format!("{base}/proxy{}", self.path))
            .header("svc-proxy-key", proxy_key)
            .header("svc-api-key", api_key);
        if !self.content_type.is_empty() {
            match HeaderValue::from_str(&self.content_type) {
                Ok(v) => builder = builder.header(http::header::CONTENT_TYPE, v),
                Err(_) => errors.add("content_type", "is not a valid header value"),
            }
        }
        for line in self
            .headers
            .expose()
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            match parse_header(line) {
                Ok((name, value)) => builder = builder.header(name, value),
                Err(message) => errors.add("headers", message),
            }
        }
        errors.into_result()?;
        builder
            .method(method.unwrap_or(Method::POST))
            .body(Full::new(Bytes::from(self.body.expose().clone())))
            .map_err(|e| ValidationErrors::single("path", format!("is not usable in a URL: {e}")))
    }
}

/// `Name: value`, refusing what the gateway's caller may not set from here: the `SVC-*`
/// headers (keys, ephemeral destination) and the message framing ones.
fn parse_header(line: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = line
        .split_once(':')
        .ok_or_else(|| format!("`{}` is not of the form Name: value", line.trim()))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("`{}` is not a header name", name.trim()))?;
    let reserved = name.as_str().starts_with("svc-")
        || matches!(
            name.as_str(),
            "host" | "content-length" | "transfer-encoding" | "connection" | "content-type"
        );
    if reserved {
        return Err(format!("the header `{name}` cannot be set here"));
    }
    let value = HeaderValue::from_str(value.trim())
        .map_err(|_| format!("the value of `{name}` is not a valid header value"))?;
    Ok((name, value))
}

impl GatewayClient {
    /// A client of the gateway at `base` (`http://host:port`).
    pub(crate) fn new(base: &str) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(Duration::from_secs(5)));
        connector.set_nodelay(true);
        Self {
            base: base.trim_end_matches('/').to_string(),
            client: Client::builder(TokioExecutor::new()).build(connector),
        }
    }

    /// Sends `request` with the two keys: the answer, or why there is none (a bad form, or
    /// the gateway could not be reached or did not answer).
    pub(crate) async fn send(
        &self,
        request: &TryRequest,
        proxy_key: &Secret<String>,
        api_key: &Secret<String>,
    ) -> Result<TryResponse, TryError> {
        let req = request
            .build(&self.base, proxy_key.expose(), api_key.expose())
            .map_err(TryError::Form)?;
        let exchange = async {
            let res = self
                .client
                .request(req)
                .await
                .map_err(TryError::Unreachable)?;
            let status = res.status().as_u16();
            let headers = res
                .headers()
                .iter()
                .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                .collect();
            let body = Limited::new(res.into_body(), MAX_BODY_BYTES)
                .collect()
                .await
                .map_err(TryError::Unreadable)?
                .to_bytes();
            let truncated = body.len() > SHOWN_BODY_BYTES;
            let shown = &body[..body.len().min(SHOWN_BODY_BYTES)];
            Ok::<_, TryError>(TryResponse {
                status,
                headers,
                body: pretty(shown),
                truncated,
            })
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| TryError::Timeout(TIMEOUT.as_secs()))?
    }
}

/// Why "Try it" shows no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TryError {
    /// The form does not make a request.
    #[error("the form does not make a request")]
    Form(ValidationErrors),
    /// The gateway could not be reached.
    #[error("the gateway could not be reached: {0}")]
    Unreachable(hyper_util::client::legacy::Error),
    /// The answer broke off or was too large.
    #[error("the answer could not be read: {0}")]
    Unreadable(Box<dyn std::error::Error + Send + Sync>),
    /// No answer within this many seconds.
    #[error("no answer within {0} s")]
    Timeout(u64),
}

/// JSON indented for reading; anything else as (lossy) text.
fn pretty(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, path: &str, headers: &str) -> TryRequest {
        TryRequest {
            method: method.into(),
            path: path.into(),
            content_type: "application/json".into(),
            headers: Secret::new(headers.into()),
            body: Secret::new("{}".into()),
        }
    }

    #[test]
    fn the_keys_and_url_come_from_the_server() {
        let req = request("POST", "/charges?x=1", "X-Trace: 1")
            .build("http://127.0.0.1:9", "pk", "key_a")
            .expect("valid");
        assert_eq!(
            req.uri().to_string(),
            "http://127.0.0.1:9/proxy/charges?x=1"
        );
        assert_eq!(req.headers()["svc-proxy-key"], "pk");
        assert_eq!(req.headers()["svc-api-key"], "key_a");
        assert_eq!(req.headers()["x-trace"], "1");
    }

    #[test]
    fn the_form_cannot_steer_the_request_elsewhere() {
        for (path, headers) in [
            ("@evil.example/x", ""),
            ("/a b", ""),
            ("/a#b", ""),
            ("", "SVC-PROXY-URL: https://evil.example"),
            ("", "svc-api-key: key_other"),
            ("", "Host: evil.example"),
            ("", "no colon"),
        ] {
            assert!(
                request("POST", path, headers)
                    .build("http://127.0.0.1:9", "pk", "k")
                    .is_err(),
                "{path:?} {headers:?}"
            );
        }
        assert!(request("TRACE", "", "")
            .build("http://127.0.0.1:9", "pk", "k")
            .is_err());
    }
}
