//! Embeds the vault in a plain Rust program: SQLite storage, a tenant, and a token stored and
//! read back through the domain's use-cases — no HTTP involved.
//!
//! ```sh
//! cargo run --example embed
//! ```

use std::{error::Error, path::Path, sync::Arc};

use serde_json::{json, Value};
use tessera_domain::{MasterKey, NewToken, Secret, TokenType, Vault};
use tessera_storage::{Database, DatabaseUrl, PoolOptions};

/// Opens (and migrates) SQLite at `path`, creates a tenant, stores a card and reads it back.
/// Returns the decrypted data.
pub async fn run(path: &Path) -> Result<Value, Box<dyn Error>> {
    let url = DatabaseUrl::Sqlite {
        path: path.to_path_buf(),
    };
    let db = Database::connect(&url, PoolOptions::default_for(&url)).await?;
    db.migrate().await?;

    // In a real program the master key comes from your secret store; it never touches the disk.
    let vault = Vault::new(Arc::new(db), MasterKey::generate());
    let tenant = vault.create_tenant("embedded").await?;
    let admin = vault.authenticate(Some(tenant.api_key.expose())).await?;

    let token = vault
        .create_token(
            &admin,
            NewToken {
                id: None,
                token_type: TokenType::Card,
                data: Some(Secret::new(
                    json!({"number": "4242424242424242", "cvc": "123"}),
                )),
                metadata: Some([("customer".to_string(), "cus_123".to_string())].into()),
                containers: None,
                expires_at: None,
                deduplicate_token: false,
                destinations: None,
                search_indexes: None,
                fingerprint_expression: None,
                mask: None,
            },
        )
        .await?;
    let read = vault.get_token(&admin, token.id).await?;
    println!(
        "stored token {} in {} (data: {:?})",
        read.id, read.container, read.data
    );
    Ok(read.data.into_inner())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let path = std::env::temp_dir().join(format!("tessera-embed-{}.db", std::process::id()));
    let data = run(&path).await?;
    println!("decrypted: {data}");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
