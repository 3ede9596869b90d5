//! Where the master key comes from: `TESSERA_MASTER_KEY`, else `--master-key-file`, else (on
//! SQLite only) `<data-dir>/master.key`, generated on first start.

use anyhow::{bail, Context};
use tessera_domain::MasterKey;
use tessera_storage::DatabaseUrl;

use crate::{cli::DbArgs, secret_file};

/// Environment variable holding the base64 master key itself.
pub const ENV: &str = "TESSERA_MASTER_KEY";

/// Resolves the master key for `url`.
pub fn load(db: &DbArgs, url: &DatabaseUrl) -> anyhow::Result<MasterKey> {
    if let Some(encoded) = std::env::var(ENV).ok().filter(|v| !v.trim().is_empty()) {
        return MasterKey::from_base64(&encoded).context(ENV);
    }
    if let Some(path) = &db.master_key_file {
        return read_key_file(path);
    }
    match url {
        DatabaseUrl::Sqlite { .. } => {
            let path = db.data_dir.join("master.key");
            if path.exists() {
                return read_key_file(&path);
            }
            let key = MasterKey::generate();
            secret_file::write_new(&path, format!("{}\n", key.to_base64().expose()).as_bytes())
                .with_context(|| format!("writing the generated master key to {}", path.display()))?;
            tracing::warn!(
                path = %path.display(),
                "no master key configured: generated one and stored it beside the database. Back it up; without it the data cannot be decrypted. For production set {ENV} or --master-key-file."
            );
            Ok(key)
        }
        DatabaseUrl::Postgres { .. } => bail!(
            "no master key: on PostgreSQL set {ENV} or --master-key-file to base64 of 32 random bytes (e.g. `openssl rand -base64 32`)"
        ),
    }
}

/// Environment variable holding the previous base64 master key during a rotation.
pub const PREVIOUS_ENV: &str = "TESSERA_PREVIOUS_MASTER_KEY";

/// The previous master key, when a rotation is under way (none otherwise).
pub fn load_previous(db: &DbArgs) -> anyhow::Result<Vec<MasterKey>> {
    if let Some(encoded) = std::env::var(PREVIOUS_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        return Ok(vec![MasterKey::from_base64(&encoded).context(PREVIOUS_ENV)?]);
    }
    match &db.previous_master_key_file {
        Some(path) => Ok(vec![read_key_file(path)?]),
        None => Ok(Vec::new()),
    }
}

/// Reads and decodes a base64 key file (trailing whitespace allowed).
fn read_key_file(path: &std::path::Path) -> anyhow::Result<MasterKey> {
    let encoded = std::fs::read_to_string(path)
        .with_context(|| format!("reading the master key file {}", path.display()))?;
    MasterKey::from_base64(&encoded).with_context(|| format!("master key file {}", path.display()))
}
