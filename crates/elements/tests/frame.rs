//! Who may load the frame, and with which policy: only a public key whose application lists
//! the embedding origin gets the frame, with `frame-ancestors` naming that origin alone and
//! `connect-src` the configured API; everything else gets a refusal no page may frame.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use actix_web::{test, App};
use tessera_domain::{origin::Origin, ApplicationInput, ApplicationType, Permission};
use tessera_elements::{library_integrity, Elements, ElementsConfig, LIBRARY};
use tessera_testkit::{api::vault_with, backend_tests, db::TestDatabase};

backend_tests!(
    only_a_listed_origin_of_a_public_key_gets_the_frame,
    the_library_is_public_and_pinned
);

const SHOP: &str = "https://shop.example";
const API: &str = "https://vault.example";

async fn key(
    vault: &tessera_domain::Vault,
    admin: &tessera_domain::Principal,
    public: bool,
) -> String {
    let input = ApplicationInput {
        name: "k".into(),
        app_type: if public {
            ApplicationType::Public
        } else {
            ApplicationType::Private
        },
        permissions: vec![if public {
            Permission::TokenCreate
        } else {
            Permission::TokenRead
        }],
        rules: vec![],
        expires_at: None,
        create_key: None,
        allowed_origins: public.then(|| vec![SHOP.to_string()]),
    };
    let issued = vault.create_application(admin, input).await.expect("app");
    issued.api_key.expose().to_string()
}

/// The fields over `vault`, sending cards to [`API`].
fn fields(vault: tessera_domain::Vault) -> Elements {
    Elements::new(
        vault,
        ElementsConfig {
            api_origin: Origin::parse(API).expect("origin"),
            api_key_header: "svc-api-key".into(),
        },
    )
}

async fn only_a_listed_origin_of_a_public_key_gets_the_frame(db: &TestDatabase) {
    let vault = vault_with(db, Default::default());
    let admin = tessera_testkit::vault::tenant_admin(&vault, "acme").await;
    let public = key(&vault, &admin, true).await;
    let private = key(&vault, &admin, false).await;
    let elements = fields(vault);
    let app = test::init_service(App::new().configure(|cfg| elements.configure(cfg))).await;
    let get = |key: &str, origin: &str, field: &str| {
        test::TestRequest::get()
            .uri(&format!(
                "/elements/v1/frame.html?key={key}&origin={}&field={field}&name=n&group=g",
                origin.replace(':', "%3A").replace('/', "%2F")
            ))
            .to_request()
    };
    let ok = test::call_service(&app, get(&public, SHOP, "card")).await;
    assert_eq!(ok.status(), 200);
    let csp = ok
        .headers()
        .get("content-security-policy")
        .expect("csp")
        .to_str()
        .expect("ascii");
    assert_eq!(
        csp,
        format!("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src {API}; frame-ancestors {SHOP}; base-uri 'none'; form-action 'none'")
    );
    assert_eq!(
        ok.headers().get("referrer-policy").expect("referrer"),
        "no-referrer"
    );
    assert_eq!(
        ok.headers().get("cache-control").expect("cache"),
        "no-store"
    );
    for (key, origin, field, status) in [
        (public.as_str(), "https://evil.example", "card", 403),
        (public.as_str(), "http://shop.example", "card", 400),
        (private.as_str(), SHOP, "card", 403),
        ("key_00000000000000000000000000000000", SHOP, "card", 403),
        ("not-a-key", SHOP, "card", 403),
        (public.as_str(), SHOP, "card%22%3E%3Cscript%3E", 400),
        (public.as_str(), "*", "card", 400),
    ] {
        let res = test::call_service(&app, get(key, origin, field)).await;
        assert_eq!(res.status(), status, "{origin} {field}");
        let csp = res.headers().get("content-security-policy").expect("csp");
        assert!(
            csp.to_str()
                .expect("ascii")
                .contains("frame-ancestors 'none'"),
            "{csp:?}"
        );
        let body = test::read_body(res).await;
        assert!(
            !String::from_utf8_lossy(&body).contains("<script"),
            "no markup"
        );
    }
}

async fn the_library_is_public_and_pinned(db: &TestDatabase) {
    let vault = vault_with(db, Default::default());
    let elements = fields(vault);
    let app = test::init_service(App::new().configure(|cfg| elements.configure(cfg))).await;
    let res = test::call_service(
        &app,
        test::TestRequest::get()
            .uri("/elements/v1/tessera-elements.js")
            .insert_header(("origin", SHOP))
            .to_request(),
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()
            .get("access-control-allow-origin")
            .expect("cors"),
        SHOP
    );
    assert!(res
        .headers()
        .get("access-control-allow-credentials")
        .is_none());
    let body = test::read_body(res).await;
    assert_eq!(body.as_ref(), LIBRARY.as_bytes());
    assert!(LIBRARY.len() < 40 * 1024, "under 40 KB unminified");
    // The hash docs/elements.md publishes is the file's.
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/elements.md"
    ))
    .expect("docs/elements.md");
    assert!(
        docs.contains(&library_integrity()),
        "docs/elements.md publishes {}",
        library_integrity()
    );
    let config = test::call_service(
        &app,
        test::TestRequest::get()
            .uri("/elements/v1/config.json")
            .to_request(),
    )
    .await;
    let body: serde_json::Value = test::read_body_json(config).await;
    assert_eq!(body, serde_json::json!({"api_origin": API}));
}
