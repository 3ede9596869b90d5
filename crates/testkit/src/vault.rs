//! Tenants and tokens written straight through a [`Vault`], for tests and benches that start
//! below the HTTP layer: the setup they would otherwise each spell out.

use serde_json::Value;
use tessera_domain::{NewToken, Principal, TokenId, TokenType, Vault};

/// Creates the tenant `name` and signs in with its admin key: the tenant's admin.
pub async fn tenant_admin(vault: &Vault, name: &str) -> Principal {
    let tenant = vault.create_tenant(name).await.expect("tenant");
    vault
        .authenticate(Some(tenant.api_key.expose()))
        .await
        .expect("admin")
}

/// Creates a plain `token` of type `token` holding `data`, as `admin`: its id.
pub async fn plain_token(vault: &Vault, admin: &Principal, data: Value) -> TokenId {
    vault
        .create_token(admin, NewToken::new(TokenType::Token, data))
        .await
        .expect("token")
        .id
}
