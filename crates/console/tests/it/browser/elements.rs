//! The hosted card fields in Chromium: a merchant's page on another origin embeds the card
//! element served beside the console, a person types a card, and the page gets a token it
//! cannot read the card from. The attacker's side: a page that is not allowed, a hostile
//! frame inside an allowed page, style injection, and what CORS answers to each key.

use std::{net::TcpListener, time::Duration};

use actix_web::{App, HttpServer};
use chromiumoxide::layout::Point;
use serde_json::{json, Value};
use tessera_domain::{
    audit::{AuditAction, ResourceId},
    origin::Origin,
    ApplicationInput, ApplicationType, Permission, Principal, TokenId, Vault,
};
use tessera_elements::{Elements, ElementsConfig};
use tessera_http::{browser::Browsers, ApiConfig, ApiState, ProcessMetrics};
use tessera_testkit::{backend_tests, db::TestDatabase};

use super::{chromium, origins::Site, serve_app, Served, Tab};
use crate::support::Setup;

backend_tests!(
    a_typed_card_becomes_a_token_the_page_never_sees,
    a_page_that_is_not_allowed_can_neither_frame_nor_call,
    cors_answers_a_page_only_what_a_public_key_may_do,
    errors_reach_the_page_without_digits_and_fields_compose,
    a_hostile_frame_in_the_page_cannot_drive_the_fields,
    a_skimming_frame_with_another_tenants_key_hears_nothing,
);

const CARD: &str = "4242424242424242";

fn listener() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", l.local_addr().expect("addr"));
    (l, base)
}

/// A public key of `admin`'s tenant whose application lists `origin`.
async fn public_key(vault: &Vault, admin: &Principal, origin: &str) -> String {
    let input = ApplicationInput {
        name: "checkout page".into(),
        app_type: ApplicationType::Public,
        permissions: vec![Permission::TokenCreate],
        rules: vec![],
        expires_at: None,
        create_key: None,
        allowed_origins: Some(vec![origin.to_string()]),
    };
    let issued = vault
        .create_application(admin, input)
        .await
        .expect("public application");
    issued.api_key.expose().to_string()
}

/// A tenant with a public key for `allowed` pages, its API and its fields served apart.
struct Checkout {
    s: Setup,
    api: String,
    fields: String,
    public_key: String,
    _servers: [Served; 2],
}

impl Checkout {
    async fn start(db: &TestDatabase, allowed: &str) -> Self {
        let s = Setup::start(db, Duration::from_secs(60)).await;
        let (api_l, api) = listener();
        let (fields_l, fields) = listener();
        let public_key = public_key(s.vault(), &s.admin, allowed).await;
        let state = ApiState::new(
            s.vault().clone(),
            ApiConfig::default(),
            ProcessMetrics::new(),
        )
        .with_browsers(Browsers::new(
            Some(Origin::parse(&fields).expect("origin")),
            tessera_http::browser::DEFAULT_PUBLIC_RATE_LIMIT,
        ));
        let elements = Elements::new(
            s.vault().clone(),
            ElementsConfig {
                api_origin: Origin::parse(&api).expect("origin"),
                api_key_header: "svc-api-key".into(),
            },
        );
        let servers = [
            Served {
                handle: serve_app!(api_l, move || tessera_http::app(state.clone())),
                base: api.clone(),
            },
            Served {
                handle: serve_app!(fields_l, move || {
                    let elements = elements.clone();
                    App::new().configure(move |cfg| elements.configure(cfg))
                }),
                base: fields.clone(),
            },
        ];
        Self {
            public_key,
            s,
            api,
            fields,
            _servers: servers,
        }
    }

    /// The merchant's page: the library pinned by its SRI hash, every message the page
    /// receives recorded, and `script` run once the elements are ready to use.
    fn page(&self, script: &str) -> String {
        format!(
            r#"<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="margin:16px;font-family:sans-serif"><h3>Checkout</h3><div id="card"></div><div id="more"></div>
<script src="{fields}/elements/v1/tessera-elements.js" integrity="{sri}" crossorigin="anonymous"></script>
<script>
window.__messages = []; window.__changes = []; window.__ready = 0;
window.addEventListener('message', (e) => window.__messages.push({{origin: e.origin, data: e.data}}));
TesseraElements.init({{ apiKey: '{key}', baseUrl: '{api}' }}).then((elements) => {{
  window.__elements = elements;
  {script}
}}).catch((e) => window.__initError = String(e));
</script></body></html>"#,
            fields = self.fields,
            sri = tessera_elements::library_integrity(),
            key = self.public_key,
            api = self.api,
        )
    }
}

async fn tokens(db: &TestDatabase) -> i64 {
    db.count("tokens").await
}

/// The card element, mounted, its events recorded.
const MOUNT_CARD: &str = r#"
  const card = elements.create('card', {
    placeholders: { number: 'Numéro de carte' },
    labels: { number: 'Numéro de carte' },
    style: { fontSize: '17px', color: '#222', backgroundColor: "red; background: url(EVIL/styled)" },
  });
  window.__card = card;
  card.on('ready', () => window.__ready += 1);
  card.on('change', (e) => window.__changes.push(e));
  card.mount('#card');
"#;

/// A checkout whose public key allows the merchant's site, and a tab on the merchant's page
/// running `script`, loaded on a screen `width` CSS pixels wide (a phone) or a desktop's;
/// `None`, and the test skips, without Chromium.
async fn at_checkout(
    db: &TestDatabase,
    width: Option<i64>,
    script: impl FnOnce(&Checkout) -> String,
) -> Option<(Checkout, Site, Tab)> {
    let chromium = chromium().await?;
    let (merchant_l, merchant) = listener();
    let c = Checkout::start(db, &merchant).await;
    let site = Site::start_on(merchant_l, c.page(&script(&c)));
    let tab = Tab::open(chromium, &site.base).await;
    if let Some(width) = width {
        tab.width(width, true).await;
    }
    tab.go_to(&format!("{}/", site.base)).await;
    Some((c, site, tab))
}

/// Waits until `js` is true in the page (15 s at most).
async fn until(tab: &Tab, js: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while tab.eval(js).await != Value::Bool(true) {
        assert!(std::time::Instant::now() < deadline, "never true: {js}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Clicks inside iframe `index` at `x` CSS pixels from its left edge, in its first row of
/// inputs: focus moves into the frame, where the keys typed next go.
async fn click_in_frame(tab: &Tab, index: usize, x: f64) {
    let rect = tab
        .eval(&format!(
            "(() => {{ const r = document.querySelectorAll('iframe')[{index}].getBoundingClientRect(); return [r.left, r.top]; }})()"
        ))
        .await;
    let n = |i: usize| rect[i].as_f64().expect("rect");
    tab.page
        .click(Point {
            x: n(0) + x,
            y: n(1) + 22.0,
        })
        .await
        .expect("click");
}

/// Types `text`, then presses each key of `then`: keys go to whatever has focus, inside a
/// frame too.
async fn keys(tab: &Tab, text: &str, then: &[&str]) {
    let body = tab.page.find_element("body").await.expect("body");
    body.type_str(text).await.expect("type");
    for key in then {
        body.press_key(key).await.expect("key");
    }
}

/// A person types the card into the card element (the first frame), moving from input to
/// input with Tab, and leaves it.
async fn type_card(tab: &Tab) {
    click_in_frame(tab, 0, 40.0).await;
    keys(tab, CARD, &["Tab"]).await;
    keys(tab, "1231", &["Tab"]).await;
    keys(tab, "737", &["Tab"]).await;
}

/// Asks the elements for a token; the created token, or `{"error": …}`.
async fn create_token(tab: &Tab, request: &str) -> Value {
    tab.eval(&format!(
        "window.__created = null; window.__elements.tokens.create({request}).then(\
           (t) => window.__created = t,\
           (e) => window.__created = {{ error: {{ status: e.status, title: e.title, errors: e.errors }} }}); true"
    ))
    .await;
    until(tab, "window.__created !== null").await;
    tab.eval("window.__created").await
}

/// Every message the page received, except the create's answer: none may carry a digit
/// string (the card, its expiry, its CVC).
async fn assert_no_digits_reached_the_page(tab: &Tab) {
    let messages = tab.eval("window.__messages").await;
    let messages = messages.as_array().expect("messages");
    assert!(!messages.is_empty(), "the frame spoke to the page");
    for m in messages {
        let data = &m["data"];
        if data["event"] == "result" || data["event"] == "resize" {
            let keys: Vec<_> = data.as_object().expect("object").keys().cloned().collect();
            if data["event"] == "resize" {
                assert_eq!(keys.len(), 4, "resize carries only its height: {data}");
            }
            continue;
        }
        let mut shown = data.clone();
        let fields = shown.as_object_mut().expect("object");
        fields.remove("name");
        assert_eq!(fields.remove("tessera"), Some(json!("v1")), "{data}");
        let text = shown.to_string();
        assert!(
            !text.chars().any(|c| c.is_ascii_digit()),
            "a message to the page holds digits: {text}"
        );
    }
}

async fn a_typed_card_becomes_a_token_the_page_never_sees(db: &TestDatabase) {
    let evil = Site::start(String::new());
    let Some((c, _site, tab)) =
        at_checkout(db, None, |_| MOUNT_CARD.replace("EVIL", &evil.base)).await
    else {
        return;
    };
    until(&tab, "window.__ready === 1").await;
    tab.screenshot("elements-empty").await;
    type_card(&tab).await;
    until(
        &tab,
        "window.__changes.length > 0 && window.__changes[window.__changes.length - 1].complete",
    )
    .await;
    let last = tab
        .eval("window.__changes[window.__changes.length - 1]")
        .await;
    assert_eq!(
        last,
        json!({"complete": true, "empty": false, "brand": "visa", "errors": []})
    );
    tab.screenshot("elements-complete").await;
    // The page's script cannot reach into the frame.
    assert_eq!(
        tab.eval("document.querySelector('iframe').contentDocument === null")
            .await,
        json!(true)
    );
    assert_eq!(
        tab.eval("(() => { try { return document.querySelector('iframe').contentWindow.document.body.innerHTML; } catch (e) { return 'blocked'; } })()")
            .await,
        json!("blocked")
    );
    let before = tokens(db).await;
    let token = create_token(
        &tab,
        "{ type: 'card', data: window.__card, metadata: { order: 'A-1' } }",
    )
    .await;
    assert!(token.get("error").is_none(), "{token}");
    assert!(
        token.get("data").is_none(),
        "no data in the answer: {token}"
    );
    assert_eq!(
        token["card"],
        json!({"brand": "visa", "last4": "4242", "expiration_month": 12, "expiration_year": 2031})
    );
    assert_eq!(token["metadata"], json!({"order": "A-1"}));
    assert_eq!(tokens(db).await, before + 1);
    assert_no_digits_reached_the_page(&tab).await;
    // Read back with a private key (the admin), it is the card.
    let id: TokenId = token["id"].as_str().expect("id").parse().expect("uuid");
    let stored =
        c.s.vault()
            .get_token(&c.s.admin, id.clone())
            .await
            .expect("read");
    assert_eq!(
        stored.data.expose(),
        &json!({"number": CARD, "expiration_month": 12, "expiration_year": 2031, "cvc": "737"})
    );
    // Recorded like any create, with the origin it came from (the fields').
    c.s.vault().audit().flush().await;
    let events = c.s.events().await;
    let created = events
        .iter()
        .find(|e| {
            e.event.action == AuditAction::TokenCreated
                && e.event.resource_ids == vec![ResourceId::from(&id)]
        })
        .expect("the create is recorded");
    assert_eq!(created.event.origin.as_deref(), Some(c.fields.as_str()));
    // The style that tried to load a URL was refused: nothing reached the attacker.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(evil.seen().is_empty(), "{:?}", evil.seen());
    tab.close().await;
}

async fn a_page_that_is_not_allowed_can_neither_frame_nor_call(db: &TestDatabase) {
    let Some(chromium) = chromium().await else {
        return;
    };
    let (_allowed_l, allowed) = listener();
    let c = Checkout::start(db, &allowed).await;
    // The other site mounts the card, frames the frame itself claiming to be the allowed
    // origin, and calls the API directly, all with the merchant's public key.
    let script = format!(
        r#"{MOUNT_CARD}
  const f = document.createElement('iframe');
  f.src = '{fields}/elements/v1/frame.html?key={key}&origin=' + encodeURIComponent('{allowed}') + '&field=card&name=x&group=y';
  document.getElementById('more').appendChild(f);
  fetch('{api}/tokens', {{ method: 'POST', headers: {{ 'content-type': 'application/json', 'svc-api-key': '{key}' }},
    body: JSON.stringify({{ type: 'token', data: 'stolen' }}) }})
    .then((r) => window.__fetched = 'answer ' + r.status, (e) => window.__fetched = e.name);"#,
        fields = c.fields,
        key = c.public_key,
        api = c.api,
        MOUNT_CARD = MOUNT_CARD.replace("EVIL", "http://127.0.0.1:9"),
    );
    // The library checks for a public key shape only; init itself succeeds anywhere.
    let other = Site::start(c.page(&script));
    let tab = Tab::open(chromium, &other.base).await;
    let before = tokens(db).await;
    tab.go_to(&format!("{}/", other.base)).await;
    until(&tab, "window.__fetched !== undefined").await;
    assert_eq!(tab.eval("window.__fetched").await, json!("TypeError"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        tab.eval("window.__ready").await,
        json!(0),
        "no frame rendered"
    );
    let from_fields = tab
        .eval(&format!(
            "window.__messages.filter((m) => m.origin === '{}').length",
            c.fields
        ))
        .await;
    assert_eq!(from_fields, json!(0), "no frame ran its script");
    assert_eq!(tokens(db).await, before, "the direct call created nothing");
    tab.close().await;
}

async fn cors_answers_a_page_only_what_a_public_key_may_do(db: &TestDatabase) {
    let script = |c: &Checkout| {
        let call = |key: &str, method: &str, path: &str, credentials: &str| {
            let body = if method == "POST" {
                ", body: JSON.stringify({ type: 'token', data: 'x' })"
            } else {
                ""
            };
            format!(
                "fetch('{api}{path}', {{ method: '{method}', credentials: '{credentials}', headers: {{ 'content-type': 'application/json', 'svc-api-key': '{key}' }}{body} }})\
                   .then((r) => 'answer ' + r.status, (e) => e.name)",
                api = c.api,
            )
        };
        let (public, private) = (c.public_key.as_str(), c.s.admin_key.as_str());
        [
            ("public_create", call(public, "POST", "/tokens", "omit")),
            ("public_tokenize", call(public, "POST", "/tokenize", "omit")),
            (
                "with_credentials",
                call(public, "POST", "/tokens", "include"),
            ),
            ("private_create", call(private, "POST", "/tokens", "omit")),
            ("public_list", call(public, "GET", "/tokens", "omit")),
            (
                "private_apps",
                call(private, "GET", "/applications", "omit"),
            ),
        ]
        .iter()
        .map(|(name, js)| {
            format!("window.__{name} = undefined; {js}.then((v) => window.__{name} = v);\n")
        })
        .collect::<String>()
    };
    let Some((_c, _site, tab)) = at_checkout(db, None, script).await else {
        return;
    };
    for (name, expected) in [
        ("public_create", "answer 201"),
        ("public_tokenize", "answer 201"),
        ("with_credentials", "TypeError"),
        ("private_create", "TypeError"),
        ("public_list", "TypeError"),
        ("private_apps", "TypeError"),
    ] {
        until(&tab, &format!("window.__{name} !== undefined")).await;
        assert_eq!(
            tab.eval(&format!("window.__{name}")).await,
            json!(expected),
            "{name}"
        );
    }
    tab.close().await;
}

async fn errors_reach_the_page_without_digits_and_fields_compose(db: &TestDatabase) {
    let script = format!(
        r#"{MOUNT_CARD}
  const number = elements.create('cardNumber');
  const expiry = elements.create('cardExpirationDate');
  const cvc = elements.create('cardVerificationCode');
  for (const [el, at] of [[number, 'n'], [expiry, 'e'], [cvc, 'c']]) {{
    const div = document.createElement('div'); div.id = at; document.getElementById('more').appendChild(div);
    el.on('ready', () => window.__ready += 1);
    el.mount('#' + at);
  }}
  window.__single = {{ number, expiry, cvc }};"#,
        MOUNT_CARD = MOUNT_CARD.replace("EVIL", "http://127.0.0.1:9"),
    );
    let Some((c, _site, tab)) = at_checkout(db, Some(375), |_| script).await else {
        return;
    };
    until(&tab, "window.__ready === 4").await;
    // A number that fails the Luhn check: the error reaches the page when it is complete.
    click_in_frame(&tab, 0, 40.0).await;
    // Between the lengths a number is judged at, a create is told only "incomplete": the
    // page cannot ask after every keystroke whether the digits so far pass the Luhn check.
    keys(&tab, "42424242424242", &[]).await;
    let early = create_token(&tab, "{ type: 'card', data: window.__card }").await;
    assert_eq!(
        early["error"]["errors"]["data.number"],
        json!(["incomplete"]),
        "{early}"
    );
    click_in_frame(&tab, 0, 300.0).await;
    keys(&tab, "41", &[]).await;
    until(
        &tab,
        "window.__changes.some((e) => e.errors.some((x) => x.field === 'number' && x.kind === 'invalid'))",
    )
    .await;
    tab.screenshot("elements-invalid-phone").await;
    // On a phone-width screen the card element wraps onto two rows and grows to fit.
    let height = tab
        .eval("document.querySelector('iframe').getBoundingClientRect().height")
        .await;
    assert!(height.as_f64().expect("height") > 80.0, "{height}");
    let refused = create_token(&tab, "{ type: 'card', data: window.__card }").await;
    assert_eq!(refused["error"]["status"], json!(400), "{refused}");
    assert!(
        refused["error"]["errors"]["data.number"].is_array(),
        "{refused}"
    );
    // Card fields go only into a card token.
    let retyped = create_token(&tab, "{ type: 'token', data: window.__card }").await;
    assert_eq!(retyped["error"]["status"], json!(400), "{retyped}");
    // Three single fields composed into one card.
    for (index, text) in [(1, CARD), (2, "0130"), (3, "123")] {
        click_in_frame(&tab, index, 20.0).await;
        keys(&tab, text, &[]).await;
    }
    keys(&tab, "", &["Tab"]).await;
    let token = create_token(
        &tab,
        "{ type: 'card', data: { number: window.__single.number, expiration_month: window.__single.expiry, expiration_year: window.__single.expiry, cvc: window.__single.cvc } }",
    )
    .await;
    assert!(token.get("error").is_none(), "{token}");
    let id: TokenId = token["id"].as_str().expect("id").parse().expect("uuid");
    let stored =
        c.s.vault()
            .get_token(&c.s.admin, id.clone())
            .await
            .expect("read");
    assert_eq!(
        stored.data.expose(),
        &json!({"number": CARD, "expiration_month": 1, "expiration_year": 2030, "cvc": "123"})
    );
    assert_no_digits_reached_the_page(&tab).await;
    tab.close().await;
}

async fn a_hostile_frame_in_the_page_cannot_drive_the_fields(db: &TestDatabase) {
    // A third-party script's frame inside the allowed page (an ad, a chat widget): it knows
    // the card frame's name and asks it to clear, restyle, and tokenize into a token it would
    // choose, with every target origin.
    let hostile = Site::start(
        r#"<script>
const name = location.hash.slice(1);
const target = parent.frames[0];
for (const m of [
  { op: 'clear' },
  { op: 'configure', style: { color: 'red' }, placeholders: { number: 'type your PIN' } },
  { op: 'tokenize', id: 'stolen', type: 'token', data: { v: { element: name, part: 'number' } } },
]) { target.postMessage(Object.assign({ tessera: 'v1' }, m), '*'); }
parent.postMessage({ hostile: 'done' }, '*');
</script>"#
            .to_string(),
    );
    let Some((_c, _site, tab)) = at_checkout(db, None, |_| {
        MOUNT_CARD.replace("EVIL", "http://127.0.0.1:9")
    })
    .await
    else {
        return;
    };
    until(&tab, "window.__ready === 1").await;
    type_card(&tab).await;
    until(&tab, "window.__changes.some((e) => e.complete)").await;
    let before = tokens(db).await;
    tab.eval(&format!(
        "(() => {{ const f = document.createElement('iframe'); f.src = '{}/#' + window.__card.name; document.getElementById('more').appendChild(f); return true; }})()",
        hostile.base
    ))
    .await;
    until(
        &tab,
        "window.__messages.some((m) => m.data && m.data.hostile === 'done')",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        tokens(db).await,
        before,
        "the hostile frame created nothing"
    );
    let results = tab
        .eval("window.__messages.filter((m) => m.data && m.data.event === 'result').length")
        .await;
    assert_eq!(results, json!(0));
    // The card was neither cleared nor changed: the page's own create still holds it.
    let token = create_token(&tab, "{ type: 'card', data: window.__card }").await;
    assert_eq!(token["card"]["last4"], json!("4242"), "{token}");
    assert_eq!(tokens(db).await, before + 1);
    tab.close().await;
}

async fn a_skimming_frame_with_another_tenants_key_hears_nothing(db: &TestDatabase) {
    let Some((c, _site, tab)) = at_checkout(db, None, |_| {
        MOUNT_CARD.replace("EVIL", "http://127.0.0.1:9")
    })
    .await
    else {
        return;
    };
    // Another tenant lists the merchant's origin too (nothing proves who owns an origin).
    let (mallory, _) = crate::support::other_tenant(c.s.vault(), "mallory").await;
    let stolen_with = public_key(c.s.vault(), &mallory, &site_origin(&tab).await).await;
    until(&tab, "window.__ready === 1").await;
    type_card(&tab).await;
    until(&tab, "window.__changes.some((e) => e.complete)").await;
    let before = tokens(db).await;
    // A skimming script on the page mounts the fields with its own key, in the checkout's
    // group, and asks that frame to create a token from the real frame's inputs.
    let skim = format!(
        r#"(() => {{
  const real = new URL(document.querySelector('iframe').src);
  const name = real.searchParams.get('name');
  const q = new URLSearchParams({{ key: '{stolen_with}', origin: location.origin, field: 'text',
    name: 'skim', group: real.searchParams.get('group') }});
  const f = document.createElement('iframe');
  f.src = real.origin + real.pathname + '?' + q;
  window.__skim = null;
  window.addEventListener('message', (e) => {{
    if (e.source !== f.contentWindow) return;
    if (e.data.event === 'ready') f.contentWindow.postMessage({{ tessera: 'v1', op: 'tokenize', id: 'skim',
      type: 'card', data: {{ number: {{ element: name, part: 'number' }}, expiration_month: {{ element: name, part: 'month' }},
      expiration_year: {{ element: name, part: 'year' }}, cvc: {{ element: name, part: 'cvc' }} }} }}, real.origin);
    if (e.data.event === 'result') window.__skim = e.data;
  }});
  document.getElementById('more').appendChild(f);
  return true;
}})()"#
    );
    tab.eval(&skim).await;
    until(&tab, "window.__skim !== null").await;
    let skimmed = tab.eval("window.__skim").await;
    assert_eq!(skimmed["ok"], json!(false), "{skimmed}");
    assert_eq!(
        tokens(db).await,
        before,
        "nothing was created, in any tenant"
    );
    tab.close().await;
}

/// The origin of the page the tab shows.
async fn site_origin(tab: &Tab) -> String {
    tab.eval("location.origin")
        .await
        .as_str()
        .expect("origin")
        .to_string()
}
