//! Writing files that hold secrets: created fresh, owner-only (0600 on Unix).

use std::{fs::OpenOptions, io::Write, path::Path};

/// Creates `path` (and its directory) with mode 0600 and writes `contents`; fails if it exists,
/// so an existing key is never overwritten.
pub fn write_new(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

/// Writes `contents` to `path` with mode 0600, replacing any existing file (a stale key from an
/// earlier database) through a temporary file and a rename, so the file is never half-written.
pub fn replace(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    write_new(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}
