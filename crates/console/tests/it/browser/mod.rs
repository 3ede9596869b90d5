//! Browser tests: Debian's Chromium, headless, driven over the DevTools protocol
//! (chromiumoxide), against the console served on a socket.
//!
//! One Chromium serves every browser test of this binary (each test gets its own browser
//! context: its own cookies); it is shut down when the last test holding it ends. Under
//! `CI=true` a missing Chromium fails the tests; otherwise they skip with a message. With
//! `TESSERA_CONSOLE_SCREENSHOTS=<dir>`, the screenshots the tests take are saved there
//! (`docs/console` for the docs).

mod elements;
mod flows;
mod newcomer;
mod origins;
mod proxies;

use std::{
    path::PathBuf,
    sync::{Arc, Weak},
    time::{Duration, Instant},
};

use actix_web::{dev::ServerHandle, App, HttpServer};
use chromiumoxide::{
    browser::{Browser, BrowserConfig},
    cdp::browser_protocol::{
        browser::BrowserContextId,
        emulation::SetDeviceMetricsOverrideParams,
        target::{CreateBrowserContextParams, CreateTargetParams},
    },
    handler::viewport::Viewport,
    page::ScreenshotParams,
    Page,
};
use futures_util::StreamExt;
use tessera_console::Console;
use tessera_testkit::db::TestDatabase;

use crate::support::Setup;

/// The running Chromium and its throw-away profile.
pub(crate) struct Chromium {
    browser: Browser,
    _profile: tempfile::TempDir,
}

static SHARED: tokio::sync::Mutex<Weak<Chromium>> = tokio::sync::Mutex::const_new(Weak::new());

fn executable() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

/// The shared Chromium, started if none runs; `None` (after saying why) when the test
/// should skip.
pub(crate) async fn chromium() -> Option<Arc<Chromium>> {
    let mut shared = SHARED.lock().await;
    if let Some(running) = shared.upgrade() {
        return Some(running);
    }
    let Some(exe) = executable() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true but Chromium is not installed (apt-get install chromium): browser tests must run");
        }
        eprintln!("skipped: Chromium is not installed (apt-get install chromium, or set CHROMIUM)");
        return None;
    };
    let chromium = Arc::new(launch(exe));
    *shared = Arc::downgrade(&chromium);
    Some(chromium)
}

/// Starts Chromium with the flags this machine needs (no sandbox as root, no GPU, no QUIC,
/// no background traffic towards Google, a fresh profile), its protocol handler polled on a
/// thread of its own.
fn launch(exe: PathBuf) -> Chromium {
    let profile = tempfile::tempdir().expect("profile dir");
    let config = BrowserConfig::builder()
        .chrome_executable(exe)
        .no_sandbox()
        .user_data_dir(profile.path())
        .args([
            "--disable-gpu",
            "--disable-quic",
            "--disable-component-update",
            "--disable-background-networking",
            "--disable-sync",
            "--no-first-run",
        ])
        .window_size(1280, 900)
        .viewport(Viewport {
            width: 1280,
            height: 900,
            ..Viewport::default()
        })
        .launch_timeout(Duration::from_secs(30))
        .request_timeout(Duration::from_secs(30))
        .build()
        .expect("browser config");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            match Browser::launch(config).await {
                Ok((browser, mut handler)) => {
                    let _ = tx.send(Ok(browser));
                    while handler.next().await.is_some() {}
                }
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                }
            }
        });
    });
    let browser = rx
        .recv()
        .expect("the launcher answers")
        .unwrap_or_else(|e| panic!("Chromium did not start: {e}"));
    Chromium {
        browser,
        _profile: profile,
    }
}

/// A browser test's world: the console over a tenant, on a socket, and a fresh tab on it.
/// Dropped in this order: the tab, then the server, then the database.
pub(crate) struct Browsing {
    pub(crate) tab: Tab,
    _served: Served,
    pub(crate) s: Setup,
}

/// The console over `db` (sessions idle out after `idle`), served, with a tab open on it and
/// not signed in; `None`, and the test skips, without Chromium.
pub(crate) async fn browse(db: &TestDatabase, idle: Duration) -> Option<Browsing> {
    browse_setup(Setup::start(db, idle).await).await
}

impl Browsing {
    /// Closes the tab (the server and the database go when this is dropped).
    pub(crate) async fn close(self) {
        self.tab.close().await;
    }
}

/// [`browse`], signed in with the tenant's admin key.
pub(crate) async fn browse_as_admin(db: &TestDatabase, idle: Duration) -> Option<Browsing> {
    let b = browse(db, idle).await?;
    flows::sign_in(&b.tab, &b.s.admin_key).await;
    Some(b)
}

/// [`browse_as_admin`] with one card token created first: the browsing and the card's id.
pub(crate) async fn browse_with_card(db: &TestDatabase) -> Option<(Browsing, String)> {
    let s = Setup::start(db, Duration::from_secs(60)).await;
    let card = s.card().await;
    let b = browse_setup(s).await?;
    flows::sign_in(&b.tab, &b.s.admin_key).await;
    Some((b, card))
}

/// [`browse`] over a prepared [`Setup`].
pub(crate) async fn browse_setup(s: Setup) -> Option<Browsing> {
    let chromium = chromium().await?;
    let served = Served::start(&s.console);
    let tab = Tab::open(chromium, &served.base).await;
    Some(Browsing {
        tab,
        _served: served,
        s,
    })
}

/// The console on a socket (as `api` serves it), stopped when dropped.
pub(crate) struct Served {
    pub(crate) base: String,
    handle: ServerHandle,
}

/// Serves the app `factory` builds on `listener` with one worker, on a thread of its own;
/// evaluates to the server's handle.
macro_rules! serve_app {
    ($listener:expr, $factory:expr) => {{
        let (listener, factory) = ($listener, $factory);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(factory)
                    .workers(1)
                    .listen(listener)
                    .expect("listen")
                    .run();
                let _ = tx.send(server.handle());
                let _ = server.await;
            });
        });
        rx.recv().expect("server started")
    }};
}
pub(crate) use serve_app;

impl Served {
    pub(crate) fn start(console: &Console) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let console = console.clone();
        let handle = serve_app!(listener, move || {
            let console = console.clone();
            App::new().configure(move |cfg| console.configure(cfg))
        });
        Self { base, handle }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // Sends the stop command now; the server's thread finishes by itself.
        drop(self.handle.stop(false));
    }
}

/// One test's browser tab, in a browser context of its own (own cookies).
pub(crate) struct Tab {
    pub(crate) page: Page,
    context: BrowserContextId,
    chromium: Arc<Chromium>,
    base: String,
}

impl Tab {
    pub(crate) async fn open(chromium: Arc<Chromium>, base: &str) -> Self {
        let context = chromium
            .browser
            .create_browser_context(CreateBrowserContextParams::default())
            .await
            .expect("browser context");
        let page = chromium
            .browser
            .new_page(
                CreateTargetParams::builder()
                    .url("about:blank")
                    .browser_context_id(context.clone())
                    .build()
                    .expect("target"),
            )
            .await
            .expect("page");
        Self {
            page,
            context,
            chromium,
            base: base.to_string(),
        }
    }

    /// Opens `path` of the console and waits for the page.
    pub(crate) async fn go(&self, path: &str) {
        self.navigating(|| async {
            self.page
                .goto(format!("{}{path}", self.base))
                .await
                .expect("navigate");
        })
        .await;
    }

    /// The console's base URL this tab was opened on.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// Opens the absolute `url` (another replica, another site) and waits for the page.
    pub(crate) async fn go_to(&self, url: &str) {
        self.navigating(|| async {
            self.page.goto(url).await.expect("navigate");
        })
        .await;
    }

    /// Runs `action` (a click, a submit) and waits until the next page has loaded.
    pub(crate) async fn navigating<F, Fut>(&self, action: F)
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        self.eval("window.__tessera_old_page = true").await;
        action().await;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let loaded = self
                .page
                .evaluate(
                    "window.__tessera_old_page === undefined && document.readyState === 'complete'",
                )
                .await
                .ok()
                .and_then(|r| r.into_value::<bool>().ok())
                .unwrap_or(false);
            if loaded {
                return;
            }
            assert!(Instant::now() < deadline, "no new page within 20 s");
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    }

    /// Clicks the element matched by `selector` and waits for the page it leads to.
    pub(crate) async fn click(&self, selector: &str) {
        let element = self
            .page
            .find_element(selector)
            .await
            .unwrap_or_else(|e| panic!("no `{selector}`: {e}"));
        self.navigating(|| async {
            element.click().await.expect("click");
        })
        .await;
    }

    /// Types `text` into the field matched by `selector` (after clearing it), key by key.
    pub(crate) async fn type_into(&self, selector: &str, text: &str) {
        self.set(selector, "").await;
        let element = self
            .page
            .find_element(selector)
            .await
            .unwrap_or_else(|e| panic!("no `{selector}`: {e}"));
        element.click().await.expect("focus");
        element.type_str(text).await.expect("type");
    }

    /// Sets the value of the field matched by `selector` (long texts: code, bodies).
    pub(crate) async fn set(&self, selector: &str, value: &str) {
        let js = format!(
            "(() => {{ const e = document.querySelector({}); e.value = {}; e.dispatchEvent(new Event('input', {{bubbles: true}})); return true; }})()",
            serde_json::to_string(selector).expect("json"),
            serde_json::to_string(value).expect("json")
        );
        assert!(
            self.eval(&js).await.as_bool().unwrap_or(false),
            "set {selector}"
        );
    }

    /// Evaluates `js` in the page: its JSON value (`null` when it has none).
    pub(crate) async fn eval(&self, js: &str) -> serde_json::Value {
        self.page
            .evaluate(js)
            .await
            .ok()
            .and_then(|r| r.into_value::<serde_json::Value>().ok())
            .unwrap_or(serde_json::Value::Null)
    }

    /// The visible text of the page.
    pub(crate) async fn text(&self) -> String {
        self.eval("document.body.innerText")
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The page's HTML as the browser holds it.
    pub(crate) async fn html(&self) -> String {
        self.page.content().await.expect("content")
    }

    /// The current path (and query).
    pub(crate) async fn path(&self) -> String {
        let url = self.page.url().await.expect("url").unwrap_or_default();
        url.strip_prefix(&self.base).unwrap_or(&url).to_string()
    }

    /// Takes a full-page screenshot; saved as `<name>.png` under
    /// `TESSERA_CONSOLE_SCREENSHOTS` when that is set.
    pub(crate) async fn screenshot(&self, name: &str) {
        let png = self
            .page
            .screenshot(ScreenshotParams::builder().full_page(true).build())
            .await
            .expect("screenshot");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        if let Ok(dir) = std::env::var("TESSERA_CONSOLE_SCREENSHOTS") {
            std::fs::create_dir_all(&dir).expect("screenshot dir");
            std::fs::write(PathBuf::from(dir).join(format!("{name}.png")), png).expect("save");
        }
    }

    /// Emulates a screen `width` CSS pixels wide (a phone: 390).
    pub(crate) async fn width(&self, width: i64, mobile: bool) {
        self.page
            .execute(SetDeviceMetricsOverrideParams::new(width, 900, 1.0, mobile))
            .await
            .expect("metrics");
    }

    /// Closes the tab and its context.
    pub(crate) async fn close(self) {
        let _ = self.page.close().await;
        let _ = self
            .chromium
            .browser
            .dispose_browser_context(self.context)
            .await;
    }
}
