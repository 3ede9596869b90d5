//! Where the master key comes from: `TESSERA_MASTER_KEY`, else `--master-key-file`, else (on
//! SQLite only) `<data-dir>/master.key`, generated on first start — and only for a database
//! that holds nothing yet (docs/operations.md, "Backups": a restored database without its key
//! is refused, never given a new key).

use std::path::{Path, PathBuf};

use tessera_domain::MasterKey;
use tessera_storage::DatabaseUrl;
use zeroize::Zeroizing;

use crate::{error::StartupError, secret_file};

/// Environment variable holding the base64 master key itself.
pub const ENV: &str = "TESSERA_MASTER_KEY";

/// Environment variable holding the previous base64 master key during a rotation.
pub const PREVIOUS_ENV: &str = "TESSERA_PREVIOUS_MASTER_KEY";

fn key_error(message: String) -> StartupError {
    StartupError::MasterKey(message)
}

/// Where the flags say the master key files are.
#[derive(Debug, Clone, Copy)]
pub struct KeyFiles<'a> {
    /// `--master-key-file`.
    pub master_key_file: Option<&'a Path>,
    /// `--previous-master-key-file`.
    pub previous_master_key_file: Option<&'a Path>,
    /// `--data-dir`: where a SQLite deployment's generated key is kept.
    pub data_dir: &'a Path,
}

/// A master key generated for a new SQLite deployment, not yet written: [`NewKeyFile::write`]
/// stores it once the database is known to hold nothing that another key wrapped.
pub struct NewKeyFile {
    path: PathBuf,
    line: Zeroizing<String>,
}

impl NewKeyFile {
    /// Where the key will be kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the key file (owner-only, never over an existing file).
    pub fn write(&self) -> Result<(), StartupError> {
        secret_file::write_new(&self.path, self.line.as_bytes()).map_err(|e| {
            key_error(format!(
                "writing the generated master key to {}: {e}",
                self.path.display()
            ))
        })?;
        tracing::warn!(
            path = %self.path.display(),
            "no master key configured: generated one and stored it beside the database. Back it up; without it the data cannot be decrypted. For production set {ENV} or --master-key-file."
        );
        Ok(())
    }
}

impl std::fmt::Debug for NewKeyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewKeyFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Resolves the master key for `url`; on SQLite with no key configured or kept, a new key and
/// the file to keep it in, which the caller writes only for an empty database.
pub fn load(
    db: KeyFiles<'_>,
    url: &DatabaseUrl,
) -> Result<(MasterKey, Option<NewKeyFile>), StartupError> {
    if let Some(encoded) = env_key(ENV) {
        return MasterKey::from_base64(&encoded)
            .map(|key| (key, None))
            .map_err(|e| key_error(format!("{ENV}: {e}")));
    }
    if let Some(path) = db.master_key_file {
        return read_key_file(path).map(|key| (key, None));
    }
    match url {
        DatabaseUrl::Sqlite { .. } => {
            let path = db.data_dir.join("master.key");
            if path.exists() {
                return read_key_file(&path).map(|key| (key, None));
            }
            let key = MasterKey::generate();
            let line = Zeroizing::new(format!("{}\n", key.to_base64().expose()));
            Ok((key, Some(NewKeyFile { path, line })))
        }
        DatabaseUrl::Postgres { .. } => Err(key_error(format!(
            "no master key: on PostgreSQL set {ENV} or --master-key-file to base64 of 32 random bytes (e.g. `openssl rand -base64 32`)"
        ))),
    }
}

/// The previous master key, when a rotation is under way (none otherwise).
pub fn load_previous(db: KeyFiles<'_>) -> Result<Vec<MasterKey>, StartupError> {
    if let Some(encoded) = env_key(PREVIOUS_ENV) {
        return MasterKey::from_base64(&encoded)
            .map(|k| vec![k])
            .map_err(|e| key_error(format!("{PREVIOUS_ENV}: {e}")));
    }
    match db.previous_master_key_file {
        Some(path) => Ok(vec![read_key_file(path)?]),
        None => Ok(Vec::new()),
    }
}

/// The base64 key in the environment variable `name`, if set and not blank; the copy is
/// wiped when dropped (the process environment itself keeps the original).
fn env_key(name: &str) -> Option<Zeroizing<String>> {
    std::env::var(name)
        .ok()
        .map(Zeroizing::new)
        .filter(|v| !v.trim().is_empty())
}

/// Reads and decodes a base64 key file (trailing whitespace allowed); the text read is wiped
/// once decoded.
fn read_key_file(path: &std::path::Path) -> Result<MasterKey, StartupError> {
    let encoded = std::fs::read_to_string(path)
        .map(Zeroizing::new)
        .map_err(|e| {
            key_error(format!(
                "reading the master key file {}: {e}",
                path.display()
            ))
        })?;
    MasterKey::from_base64(&encoded)
        .map_err(|e| key_error(format!("master key file {}: {e}", path.display())))
}
