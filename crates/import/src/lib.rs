//! # tessera-import
//!
//! `api import FILE`: stores a token export (JSON lines, one token a line, in the shape of
//! Basis Theory's token object or Tessera's own) through a running server's `POST /tokenize`,
//! from several workers at once (docs/migrating.md, "Importing tokens").
//!
//! It runs against a server, with an API key, rather than on the database with the master key:
//! every row then goes through the checks, permissions, audit trail and grouped writes every
//! other create goes through; the import needs neither the master key nor the database, only
//! a key that may create tokens in the target containers; and it works alike on SQLite and
//! PostgreSQL, on this machine or another.
//!
//! - A batch holding a bad row is not lost: the rows the server refuses are reported alone
//!   (line, id, reason) and the others sent again; a batch refused as a whole is split until
//!   the row at fault stands alone.
//! - It resumes: a rerun skips every row whose id is already stored (the server names every
//!   taken id of a batch at once). A row without an `id` gets a new one each run.
//! - Fields Tessera does not keep (`created_at`, the source vault's `fingerprint`, …) are
//!   dropped from the requests and reported with why.

mod batches;
mod client;
mod error;
mod rows;
mod tally;

use std::{
    io::{BufRead, IsTerminal, Write},
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

pub use error::ImportError;
pub use tally::{Dropped, Refusal, Summary};

use crate::{
    client::Server,
    rows::{NotKept, Read, Row},
    tally::Tally,
};

/// How to import.
#[derive(Clone)]
pub struct ImportConfig {
    /// The export, JSON lines.
    pub file: PathBuf,
    /// The server's base URL.
    pub url: url::Url,
    /// An API key that may create tokens (`private` or `management`: only they may choose ids).
    pub api_key: String,
    /// A PEM file of CA certificates to trust beside the web's roots (a private CA).
    pub ca_file: Option<PathBuf>,
    /// The server's header prefix (`SVC`, or `BT` for a server run with `--header-prefix BT`).
    pub header_prefix: String,
    /// Batches in flight at once.
    pub workers: usize,
    /// Rows per batch (1–100).
    pub batch_size: usize,
    /// Whether to show a progress line on standard error.
    pub progress: bool,
}

impl std::fmt::Debug for ImportConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The API key is a secret: never printed.
        f.debug_struct("ImportConfig")
            .field("file", &self.file)
            .field("url", &self.url.as_str())
            .field("ca_file", &self.ca_file)
            .field("header_prefix", &self.header_prefix)
            .field("workers", &self.workers)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

/// An import that stopped before its end: why, and what it did until then (rows stored before
/// the stop are stored; a rerun skips them).
#[derive(Debug)]
pub struct Stopped {
    /// Why it stopped.
    pub error: ImportError,
    /// What was stored, skipped and refused until then.
    pub summary: Summary,
}

/// The longest line read, in bytes: a token request the server takes is far shorter (its
/// body limit), so a longer line is refused as a row rather than held in memory.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Imports `config.file`: what was stored, skipped and refused, and what was not kept; or, when
/// it stopped before its end, why and what it did until then.
pub async fn run(config: ImportConfig) -> Result<Summary, Box<Stopped>> {
    let tally = Arc::new(Tally::default());
    match import(&config, &tally).await {
        Ok(()) => Ok(tally.summary()),
        Err(error) => Err(Box::new(Stopped {
            error,
            summary: tally.summary(),
        })),
    }
}

async fn import(config: &ImportConfig, tally: &Arc<Tally>) -> Result<(), ImportError> {
    if !(1..=100).contains(&config.batch_size) || config.workers == 0 {
        return Err(ImportError::Config(
            "a batch holds 1 to 100 rows, and at least one worker sends them".into(),
        ));
    }
    let server = Server::new(
        &config.url,
        &config.header_prefix,
        &config.api_key,
        config.ca_file.as_deref(),
    )?;
    if client::sends_key_in_clear(&config.url) {
        eprintln!(
            "warning: {} is plain HTTP to another machine: the API key and the tokens' data \
             cross the network in clear; use https://",
            config.url
        );
    }
    let (batches, receiver) = tokio::sync::mpsc::channel::<Vec<Row>>(config.workers * 2);
    let reader = {
        let (file, size, tally) = (config.file.clone(), config.batch_size, tally.clone());
        tokio::task::spawn_blocking(move || read_batches(&file, size, &tally, &batches))
    };
    let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
    let workers: Vec<_> = (0..config.workers)
        .map(|_| {
            let (server, tally, receiver) = (server.clone(), tally.clone(), receiver.clone());
            tokio::spawn(async move {
                loop {
                    let Some(batch) = receiver.lock().await.recv().await else {
                        return Ok(());
                    };
                    batches::store(&server, batch, &tally).await?;
                }
            })
        })
        .collect();
    let ticker = config
        .progress
        .then(|| tokio::spawn(progress(tally.clone())));
    let mut outcome = Ok(());
    for worker in workers {
        let done = worker
            .await
            .unwrap_or_else(|e| Err(ImportError::Server(e.to_string())));
        if outcome.is_ok() {
            outcome = done;
        }
    }
    // A worker that stopped closes nothing: dropping the receiver ends the reader.
    drop(receiver);
    let read = reader
        .await
        .unwrap_or_else(|e| Err(ImportError::Io(e.to_string())));
    if let Some(ticker) = ticker {
        ticker.abort();
        eprintln!();
    }
    outcome?;
    read
}

/// Reads `file` into batches of `size` rows, sent to `batches`; lines that are no token are
/// refused in `tally` as they are read.
fn read_batches(
    file: &std::path::Path,
    size: usize,
    tally: &Tally,
    batches: &tokio::sync::mpsc::Sender<Vec<Row>>,
) -> Result<(), ImportError> {
    let input = std::fs::File::open(file).map_err(|e| ImportError::Io(e.to_string()))?;
    let mut input = std::io::BufReader::new(input);
    let mut not_kept = NotKept::default();
    let mut batch = Vec::with_capacity(size);
    let mut line = Vec::new();
    for number in 1.. {
        let read = match next_line(&mut input, &mut line)? {
            Line::End => break,
            Line::TooLong => {
                Read::Refused(format!("the line is longer than {MAX_LINE_BYTES} bytes"))
            }
            Line::Read => match std::str::from_utf8(&line) {
                Ok(text) => rows::read(number, text, &mut not_kept),
                Err(_) => Read::Refused("the line is not UTF-8".into()),
            },
        };
        match read {
            Read::Blank => continue,
            Read::Refused(reason) => tally.refuse(number, None, reason),
            Read::Row(row) => batch.push(row),
        }
        tally.read(1);
        if batch.len() == size {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(size));
            if batches.blocking_send(full).is_err() {
                // Every worker stopped: the import is over.
                break;
            }
        }
    }
    if !batch.is_empty() {
        let _ = batches.blocking_send(batch);
    }
    tally.not_kept(not_kept);
    Ok(())
}

/// What reading a line gave.
enum Line {
    /// A line, in the buffer (without its newline).
    Read,
    /// A line over [`MAX_LINE_BYTES`], skipped to its end.
    TooLong,
    /// The end of the file.
    End,
}

/// Reads the next line of `input` into `line`, holding at most [`MAX_LINE_BYTES`] of it.
fn next_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> Result<Line, ImportError> {
    let io = |e: std::io::Error| ImportError::Io(e.to_string());
    line.clear();
    let limit = MAX_LINE_BYTES as u64 + 1;
    let n = std::io::Read::take(&mut *input, limit)
        .read_until(b'\n', line)
        .map_err(io)?;
    if n == 0 {
        return Ok(Line::End);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        return Ok(Line::Read);
    }
    if line.len() <= MAX_LINE_BYTES {
        return Ok(Line::Read); // the last line, without a newline
    }
    // Too long: skip the rest of it, a buffer at a time.
    loop {
        let (skip, found) = {
            let buf = input.fill_buf().map_err(io)?;
            if buf.is_empty() {
                break;
            }
            match buf.iter().position(|b| *b == b'\n') {
                Some(at) => (at + 1, true),
                None => (buf.len(), false),
            }
        };
        input.consume(skip);
        if found {
            break;
        }
    }
    line.clear();
    Ok(Line::TooLong)
}

/// Redraws the progress line on standard error four times a second.
async fn progress(tally: Arc<Tally>) {
    let started = Instant::now();
    let mut stderr = std::io::stderr();
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let (read, stored, skipped, refused) = tally.counts();
        let rate = stored as f64 / started.elapsed().as_secs_f64().max(0.001);
        let _ = write!(
            stderr,
            "\r{read} read · {stored} stored · {skipped} skipped · {refused} refused · {rate:.0} stored/s   "
        );
        let _ = stderr.flush();
    }
}

/// Whether standard error is a terminal (where a progress line is shown).
pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_bounded() {
        let long = "x".repeat(MAX_LINE_BYTES + 10);
        let text = format!("a\r\nb\n{long}\nc");
        let mut input = std::io::BufReader::with_capacity(1024, text.as_bytes());
        let mut line = Vec::new();
        let mut seen = Vec::new();
        loop {
            match next_line(&mut input, &mut line).expect("read") {
                Line::End => break,
                Line::TooLong => seen.push("too long".to_string()),
                Line::Read => seen.push(String::from_utf8(line.clone()).expect("utf-8")),
            }
        }
        assert_eq!(seen, ["a", "b", "too long", "c"]);
    }

    #[test]
    fn the_key_never_shows_in_debug() {
        let config = ImportConfig {
            file: "export.jsonl".into(),
            url: "http://127.0.0.1:8080".parse().expect("url"),
            api_key: "key_secret_value".into(),
            ca_file: None,
            header_prefix: "SVC".into(),
            workers: 8,
            batch_size: 100,
            progress: false,
        };
        assert!(!format!("{config:?}").contains("key_secret_value"));
        let mut not_kept = NotKept::default();
        let Read::Row(row) = rows::read(
            1,
            r#"{"id":"abc","type":"token","data":"the secret"}"#,
            &mut not_kept,
        ) else {
            panic!("a row")
        };
        assert!(!format!("{row:?}").contains("the secret"));
    }
}
