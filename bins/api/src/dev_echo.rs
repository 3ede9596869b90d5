//! `--dev-echo`: a destination to try proxies against on one machine, without a third party.
//!
//! Every request is answered `200` with a JSON description of what arrived: method, path,
//! query, headers and body (parsed when it is JSON, else as text). A proxy pointed at it shows
//! its caller the detokenized request, which is its purpose in the README's walk-through and
//! why it is off by default, loopback only, and announced as an unsafe setting
//! (docs/operations.md, "Settings that must never reach production").

use std::net::{SocketAddr, TcpListener};

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{Map, Value};
use tessera_service::unsafe_settings::UnsafeSetting;

/// Largest body the echo reads (larger ones get 413 from actix-web).
const MAX_BODY: usize = 1024 * 1024;

/// Why `--dev-echo` was refused.
pub(crate) fn check(addr: SocketAddr) -> anyhow::Result<()> {
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "--dev-echo must be a loopback address (127.0.0.1:PORT): the echo answers anyone with what they sent it"
    );
    Ok(())
}

/// The unsafe setting the echo is, for the start-up warning and `/metrics`.
pub(crate) fn setting() -> UnsafeSetting {
    UnsafeSetting {
        flag: "dev-echo",
        consequence: "a development echo destination is served: a proxy pointed at it shows its callers the detokenized requests",
    }
}

/// The echo server on `listener`.
pub(crate) fn server(listener: TcpListener) -> std::io::Result<actix_web::dev::Server> {
    Ok(actix_web::HttpServer::new(|| {
        actix_web::App::new()
            .app_data(web::PayloadConfig::new(MAX_BODY))
            .default_service(web::to(echo))
    })
    .shutdown_timeout(5)
    .disable_signals()
    .workers(1)
    .listen(listener)?
    .run())
}

/// What arrived, as JSON, with the headers that keep a browser from treating it as anything
/// else (it shares its host, so its site, with the console).
async fn echo(req: HttpRequest, body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("x-content-type-options", "nosniff"))
        .insert_header(("content-security-policy", "sandbox"))
        .insert_header(("cache-control", "no-store"))
        .json(describe(&req, &body))
}

fn describe(req: &HttpRequest, body: &[u8]) -> Value {
    let mut headers = Map::new();
    // A browser sends the console's cookies to every port of its host: never echoed.
    for (name, value) in req.headers().iter().filter(|(n, _)| *n != "cookie") {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match headers.get_mut(name.as_str()) {
            Some(Value::String(joined)) => {
                joined.push_str(", ");
                joined.push_str(&value);
            }
            _ => {
                headers.insert(name.as_str().to_string(), Value::String(value));
            }
        }
    }
    let body = serde_json::from_slice::<Value>(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
    serde_json::json!({
        "method": req.method().as_str(),
        "path": req.path(),
        "query": req.query_string(),
        "headers": headers,
        "body": body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_accepted() {
        assert!(check("127.0.0.1:8083".parse().expect("address")).is_ok());
        assert!(check("[::1]:8083".parse().expect("address")).is_ok());
        assert!(check("0.0.0.0:8083".parse().expect("address")).is_err());
        assert!(check("192.168.1.5:8083".parse().expect("address")).is_err());
    }

    #[test]
    fn a_request_is_described_with_its_json_body_parsed() {
        let req = actix_web::test::TestRequest::post()
            .uri("/v1/charges?x=1")
            .insert_header(("content-type", "application/json"))
            .insert_header(("cookie", "tessera_console=secret"))
            .to_http_request();
        let described = describe(&req, br#"{"card":"4242424242424242"}"#);
        assert_eq!(described["method"], "POST");
        assert_eq!(described["path"], "/v1/charges");
        assert_eq!(described["query"], "x=1");
        assert_eq!(described["headers"]["content-type"], "application/json");
        assert_eq!(described["headers"].get("cookie"), None);
        assert_eq!(described["body"]["card"], "4242424242424242");
        assert_eq!(describe(&req, b"a=b")["body"], "a=b");
    }
}
