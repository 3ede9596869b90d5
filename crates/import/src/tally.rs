//! What an import did, counted as it goes (for the progress line) and summed up at the end.

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Mutex,
};

use serde::Serialize;

use crate::rows::{NotKept, Row};

/// One row that was not stored, and why (the server's reasons never quote a value).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Refusal {
    /// Its line in the file, from 1.
    pub line: usize,
    /// The id it asked for, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Why it was refused.
    pub reason: String,
}

/// A field that was not kept: how many rows held it, and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Dropped {
    /// The field's name.
    pub field: String,
    /// How many rows held it.
    pub rows: u64,
    /// Why it is not kept.
    pub why: String,
}

/// What an import did.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Summary {
    /// Rows read (blank lines aside).
    pub rows: u64,
    /// Rows stored by this run.
    pub stored: u64,
    /// Rows whose ids were already taken: stored by an earlier run (or another import).
    pub skipped: u64,
    /// Rows refused.
    pub refused: u64,
    /// Each refused row, in line order.
    pub refusals: Vec<Refusal>,
    /// Each field that was not kept.
    pub not_kept: Vec<Dropped>,
}

/// The counters, shared by the reader and the workers.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    read: AtomicU64,
    stored: AtomicU64,
    skipped: AtomicU64,
    refusals: Mutex<Vec<Refusal>>,
    not_kept: Mutex<NotKept>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Tally {
    pub(crate) fn read(&self, n: u64) {
        self.read.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn stored(&self, n: usize) {
        self.stored.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn skipped(&self, n: usize) {
        self.skipped.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn refuse(&self, line: usize, id: Option<String>, reason: String) {
        locked(&self.refusals).push(Refusal { line, id, reason });
    }

    pub(crate) fn refuse_row(&self, row: &Row, reason: String) {
        self.refuse(row.line, row.id.clone(), reason);
    }

    pub(crate) fn not_kept(&self, fields: NotKept) {
        let mut all = locked(&self.not_kept);
        for (field, (n, why)) in fields.0 {
            all.0.entry(field).or_insert((0, why)).0 += n;
        }
    }

    /// `(read, stored, skipped, refused)` so far.
    pub(crate) fn counts(&self) -> (u64, u64, u64, u64) {
        (
            self.read.load(Ordering::Relaxed),
            self.stored.load(Ordering::Relaxed),
            self.skipped.load(Ordering::Relaxed),
            locked(&self.refusals).len() as u64,
        )
    }

    pub(crate) fn summary(&self) -> Summary {
        let (rows, stored, skipped, refused) = self.counts();
        let mut refusals = locked(&self.refusals).clone();
        refusals.sort_by_key(|r| r.line);
        let not_kept = locked(&self.not_kept)
            .0
            .iter()
            .map(|(field, (rows, why))| Dropped {
                field: field.clone(),
                rows: *rows,
                why: (*why).to_string(),
            })
            .collect();
        Summary {
            rows,
            stored,
            skipped,
            refused,
            refusals,
            not_kept,
        }
    }
}
