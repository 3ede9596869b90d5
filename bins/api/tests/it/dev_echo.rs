//! `--dev-echo` and the settings that must never reach production: an echo destination shows
//! what a proxy sent, and every unsafe setting is logged at start-up and exposed on `/metrics`.

use serde_json::{json, Value};
use tessera_testkit::process::{call, free_port, Server};

use crate::cli::{bootstrap, command, post};

fn metrics(base: &str) -> String {
    tessera_testkit::http_client::get(&format!("{base}/metrics"), &[]).text()
}

#[test]
fn the_echo_shows_the_detokenized_request_and_unsafe_settings_are_announced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let echo = format!("127.0.0.1:{}", free_port());
    let log = dir.path().join("stderr.log");
    let mut c = command(dir.path());
    c.args(["serve", "--allow-private-destinations", "--dev-echo", &echo])
        .args(["--console-listen", &format!("127.0.0.1:{}", free_port())]);
    let mut server = Server::start_with_stderr(c, std::fs::File::create(&log).expect("log"));
    let admin = bootstrap(&mut server)["api_key"]
        .as_str()
        .expect("key")
        .to_string();

    let scraped = metrics(&server.base);
    for flag in ["allow-private-destinations", "dev-echo"] {
        assert!(
            scraped.contains(&format!(r#"tessera_unsafe_setting{{flag="{flag}"}} 1"#)),
            "{scraped}"
        );
    }
    let logged = std::fs::read_to_string(&log).expect("log");
    assert_eq!(
        logged.matches("UNSAFE setting in force").count(),
        2,
        "{logged}"
    );

    let (status, token) = post(
        &format!("{}/tokens", server.base),
        &admin,
        json!({"type": "card", "data": {"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030}}),
    );
    assert_eq!(status, 201, "{token}");
    let code = "module.exports = async function (req) { const { body, headers } = req.args; \
                headers['x-merchant'] = req.configuration.MERCHANT; return { body, headers }; };";
    let (status, proxy) = post(
        &format!("{}/proxies", server.base),
        &admin,
        json!({"name": "echo", "destination_url": format!("http://{echo}/v1/charges"),
               "configuration": {"MERCHANT": "m_1"}, "request_transform": {"code": code}}),
    );
    assert_eq!(status, 201, "{proxy}");
    let id = token["id"].as_str().expect("id");
    let (status, echoed) = call(
        "POST",
        &format!("{}/proxy?x=1", server.base),
        &[
            ("SVC-PROXY-KEY", proxy["key"].as_str().expect("key")),
            ("SVC-API-KEY", &admin),
        ],
        Some(json!({"amount": 1000, "card": format!("{{{{ {id} | json: '$.number' }}}}")})),
    );
    assert_eq!(status, 200, "{echoed}");
    assert_eq!(echoed["method"], "POST");
    assert_eq!(echoed["path"], "/v1/charges");
    assert_eq!(echoed["query"], "x=1");
    assert_eq!(
        echoed["body"],
        json!({"amount": 1000, "card": "4242424242424242"})
    );
    assert_eq!(echoed["headers"]["x-merchant"], "m_1");
    assert_eq!(echoed["headers"].get("svc-api-key"), None::<&Value>);
    assert!(server.terminate().success());
}

#[test]
fn a_default_server_has_no_unsafe_setting_and_the_echo_is_loopback_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = crate::cli::serve(dir.path(), &[], &[]);
    assert!(!metrics(&server.base).contains("tessera_unsafe_setting"));
    drop(server);
    let out = crate::cli::run(
        dir.path(),
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--no-console",
            "--dev-echo",
            "0.0.0.0:8083",
        ],
        &[],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--dev-echo must be a loopback address"),
        "{stderr}"
    );
}
