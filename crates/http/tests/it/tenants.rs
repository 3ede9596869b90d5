//! Tenant isolation of tokens and applications on both backends: another tenant's resources
//! are not found, not listed and not changed.

use serde_json::json;
use tessera_testkit::{backend_tests, db::TestDatabase};

use crate::caller::{total, two_tenants, Caller};

backend_tests!(tokens_are_isolated, applications_are_isolated);

async fn tokens_are_isolated(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let owner = Caller::new(&app, &a.admin_key);
    let secret = json!({"type": "token", "data": "a's secret"});
    let id = owner.create("/tokens", secret).await;
    let uri = format!("/tokens/{id}");
    let stranger = Caller::new(&app, &b.admin_key);
    stranger.get(&uri).await.expect(404);
    stranger.delete(&uri).await.expect(404);
    let by_id = stranger.total(&format!("/tokens?id={id}")).await;
    assert_eq!(by_id, json!(0));
    // a still has it, unchanged.
    assert_eq!(owner.page(&uri).await["data"], json!("a's secret"));
}

async fn applications_are_isolated(db: &TestDatabase) {
    let (app, a, b) = two_tenants(db).await;
    let owner = Caller::new(&app, &a.admin_key);
    let spec = json!({"name": "x", "type": "private", "permissions": ["token:read"]});
    let uri = format!(
        "/applications/{}",
        owner.create("/applications", spec).await
    );
    let stranger = Caller::new(&app, &b.admin_key);
    stranger.get(&uri).await.expect(404);
    stranger.delete(&uri).await.expect(404);
    let regenerate = format!("{uri}/regenerate");
    stranger.post_empty(&regenerate).await.expect(404);
    let upd = json!({"name": "stolen", "type": "private", "permissions": ["token:read"]});
    stranger.put(&uri, upd).await.expect(404);
    let apps = stranger.page("/applications").await;
    assert_eq!(total(&apps), &json!(1), "b sees only its own admin");
    // a still has it, unchanged.
    assert_eq!(owner.page(&uri).await["name"], json!("x"));
}
