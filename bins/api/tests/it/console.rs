//! The web console as `api serve` serves it: on a listener of its own (`--console-listen`),
//! never beside `/proxy` (its pages and error pages keep their own headers), signing in over
//! real HTTP, "Try it" through this process's own `/proxy`, `/proxy` answers hardened for
//! browsers, and `--no-console` / `TESSERA_NO_CONSOLE`.

use std::io::{BufRead, BufReader, Read, Write};

use serde_json::json;

use crate::cli::{bootstrap, command, post, serve};

// The console is reached at `server.console`, the API and `/proxy` at `server.base`.

const CSP: &str = "default-src 'self'; script-src 'self'; object-src 'none'; \
     frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/// An answer: status, headers (name, value), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// `name=value` of the `Set-Cookie` named `name`.
    fn cookie(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
            .filter_map(|(_, v)| v.split(';').next())
            .find(|pair| pair.starts_with(&format!("{name}=")))
            .map(str::to_string)
    }

    fn csrf(&self) -> String {
        let marker = "name=\"csrf\" value=\"";
        let start = self.body.find(marker).expect("csrf field") + marker.len();
        let end = self.body[start..].find('"').expect("end") + start;
        self.body[start..end].to_string()
    }
}

/// One request with `cookie`, never following redirects.
fn send(method: &str, url: &str, cookie: &str, form: Option<&[(&str, &str)]>) -> Answer {
    let mut headers = Vec::new();
    if !cookie.is_empty() {
        headers.push(("Cookie", cookie));
    }
    let body = form.map(|pairs| {
        headers.push(("Content-Type", "application/x-www-form-urlencoded"));
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish()
            .into_bytes()
    });
    let res = tessera_testkit::http_client::send(method, url, &headers, body)
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let status = res.status;
    let headers = res
        .headers
        .iter()
        .map(|(name, v)| {
            (
                name.as_str().to_string(),
                v.to_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let body = res.text();
    Answer {
        status,
        headers,
        body,
    }
}

/// A destination that answers `200` with the body it received.
fn echo() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let (mut line, mut length) = (String::new(), 0usize);
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let stream = reader.get_mut();
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    format!("http://{addr}/charges")
}

fn assert_headers(what: &str, a: &Answer) {
    assert_eq!(a.header("content-security-policy"), Some(CSP), "{what}");
    assert_eq!(
        a.header("x-content-type-options"),
        Some("nosniff"),
        "{what}"
    );
    assert_eq!(a.header("referrer-policy"), Some("no-referrer"), "{what}");
    assert_eq!(a.header("cache-control"), Some("no-store"), "{what}");
    assert!(a.header("x-request-id").is_some(), "{what}");
}

/// Signs in through the console's form: the session cookie (`name=value`).
fn sign_in(base: &str, key: &str) -> String {
    let form = send("GET", &format!("{base}/console"), "", None);
    assert_eq!(form.status, 200);
    assert_headers("sign-in page", &form);
    let signin = form
        .cookie("tessera_console_signin")
        .expect("sign-in cookie");
    let csrf = form.csrf();
    let signed = send(
        "POST",
        &format!("{base}/console/sign-in"),
        &signin,
        Some(&[("csrf", csrf.as_str()), ("api_key", key)]),
    );
    assert_eq!(signed.status, 303);
    assert_eq!(signed.header("location"), Some("/console/tokens"));
    signed.cookie("tessera_console").expect("session cookie")
}

#[test]
fn the_console_is_mounted_beside_the_api_and_tries_through_this_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = serve(dir.path(), &["--allow-private-destinations"], &[]);
    let admin = bootstrap(&mut server);
    let admin = admin["api_key"].as_str().expect("key").to_string();
    let (api, base) = (server.base.clone(), server.console.clone());
    for (method, path, status) in [
        ("GET", "/console/nope", 404),
        ("PUT", "/console/tokens", 405),
    ] {
        let a = send(method, &format!("{base}{path}"), "", None);
        assert_eq!(a.status, status, "{path}");
        assert_headers(path, &a);
        let html = a
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/html"));
        assert!(html, "{path}: the console's own error page");
    }
    let session = sign_in(&base, &admin);
    let card = json!({"number": "4242424242424242"});
    let (status, token) = post(
        &format!("{api}/tokens"),
        &admin,
        json!({"type": "card", "data": card}),
    );
    assert_eq!(status, 201, "{token}");
    let (status, proxy) = post(
        &format!("{api}/proxies"),
        &admin,
        json!({"name": "echo", "destination_url": echo(), "require_auth": true}),
    );
    assert_eq!(status, 201, "{proxy}");
    let proxy = format!(
        "{base}/console/proxies/{}",
        proxy["id"].as_str().expect("id")
    );
    let page = send("GET", &proxy, &session, None);
    assert_eq!(page.status, 200);
    let token = token["id"].as_str().expect("id");
    let body = format!("{{\"n\": \"{{{{ {token} | json: '$.number' }}}}\"}}");
    let form = [
        ("csrf", page.csrf()),
        ("method", "POST".into()),
        ("content_type", "application/json".into()),
        ("body", body),
    ];
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let tried = send("POST", &format!("{proxy}/try"), &session, Some(&form));
    assert_eq!(tried.status, 200, "{}", tried.body);
    assert!(
        tried.body.contains("svc-proxy-destination-status: 200"),
        "{}",
        tried.body
    );
    assert!(
        tried.body.contains("4242424242424242"),
        "detokenized by this process's gateway"
    );
    assert!(
        !tried.body.contains(&admin) && !page.body.contains(&admin),
        "no key in a page"
    );
    assert!(server.terminate().success());
}

#[test]
fn no_console_by_flag_or_environment_and_a_bad_ttl_is_refused() {
    for (args, envs) in [
        (vec!["--no-console"], vec![]),
        (vec![], vec![("TESSERA_NO_CONSOLE", "true")]),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = serve(dir.path(), &args, &envs);
        let a = send("GET", &format!("{}/console", server.base), "", None);
        assert_eq!(a.status, 404, "{args:?} {envs:?}");
        assert_eq!(a.header("content-type"), Some("application/problem+json"));
        assert!(
            std::net::TcpStream::connect(server.console.trim_start_matches("http://")).is_err(),
            "no console listener"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = command(dir.path())
        .args(["serve", "--console-session-ttl", "0"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("must be from 1 to 43200 seconds"),
        "{stderr}"
    );
}

#[test]
fn the_console_never_shares_an_origin_with_the_proxy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = serve(dir.path(), &[], &[]);
    let admin = bootstrap(&mut server);
    let admin = admin["api_key"].as_str().expect("key").to_string();
    let on_api = send("GET", &format!("{}/console", server.base), "", None);
    assert_eq!(on_api.status, 404, "the API's listener serves no console");
    for path in [
        "/proxy",
        "/proxy/x?svc-proxy-key=abc",
        "/tokens",
        "/healthz",
    ] {
        let a = send("GET", &format!("{}{path}", server.console), "", None);
        assert_eq!(a.status, 404, "{path} on the console's listener");
        assert_headers(path, &a);
    }
    let root = send("GET", &format!("{}/", server.console), "", None);
    assert_eq!(
        (root.status, root.header("location")),
        (303, Some("/console"))
    );
    assert!(
        sign_in(&server.console, &admin).len() > 20,
        "signed in on the console listener"
    );
    let listen = server.base.trim_start_matches("http://").to_string();
    let out = command(dir.path())
        .args(["serve", "--listen", &listen, "--console-listen", &listen])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--console-listen must differ"), "{stderr}");
    assert!(server.terminate().success());
}

/// A transform that answers by itself with a page, a cookie planted for the console and the
/// headers that hand a page powers over its origin: none of it reaches the browser as sent.
#[test]
fn proxy_answers_are_sandboxed_and_carry_no_cookie() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = serve(dir.path(), &[], &[]);
    let admin = bootstrap(&mut server);
    let admin = admin["api_key"].as_str().expect("key").to_string();
    let code = r#"module.exports = async function () {
        throw new CustomHttpResponseError({status: 200, headers: {
            "content-type": "text/html",
            "set-cookie": "tessera_console=planted; Path=/console/tokens/new",
            "service-worker-allowed": "/",
            "clear-site-data": "\"cookies\""
        }, body: "<script>alert(document.domain)</script>"});
    };"#;
    let (status, proxy) = post(
        &format!("{}/proxies", server.base),
        &admin,
        json!({"name": "page", "destination_url": "https://example.com/", "require_auth": false,
               "request_transform": {"code": code}}),
    );
    assert_eq!(status, 201, "{proxy}");
    let key = proxy["key"].as_str().expect("key");
    let a = send(
        "GET",
        &format!("{}/proxy?svc-proxy-key={key}", server.base),
        "",
        None,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body.contains("<script>"), "the body itself is relayed");
    assert_eq!(a.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(a.header("content-security-policy"), Some("sandbox"));
    for gone in ["set-cookie", "service-worker-allowed", "clear-site-data"] {
        assert_eq!(a.header(gone), None, "{gone}");
    }
    let error = send(
        "GET",
        &format!(
            "{}/proxy?svc-proxy-key=unknownunknownunknownunknown12345",
            server.base
        ),
        "",
        None,
    );
    assert_eq!(error.status, 401);
    assert_eq!(error.header("content-security-policy"), Some("sandbox"));
    assert!(server.terminate().success());
}
