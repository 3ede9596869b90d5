//! A time limit on each SQL statement (`--query-timeout`), so that no request can keep a
//! connection busy for minutes (18 concurrent metadata searches held every
//! PostgreSQL connection for over 3 minutes, and the other tenants' calls got 503).
//!
//! - **PostgreSQL**: `statement_timeout`, set on every pooled connection ([`postgres_setup`]).
//! - **SQLite**: a progress handler, installed on every connection this process opens through
//!   `sqlite3_auto_extension` (diesel does not expose the raw handle). A trace callback notes
//!   when each statement starts running on the current thread; the progress handler, called
//!   every [`PROGRESS_STEPS`] virtual-machine steps, interrupts a statement that has run past
//!   the limit of its database file. The limit is looked up by file path when the connection
//!   opens and carried in the handler's context pointer, so nothing is allocated per
//!   connection and databases opened with different limits (tests) do not interfere.
//!
//! An expired statement fails like this on both backends, and the store reports
//! [`StoreError::Timeout`](tessera_domain::store::StoreError::Timeout) (503).
#![allow(unsafe_code)]

use std::{
    cell::Cell,
    collections::HashMap,
    ffi::{c_char, c_int, c_uint, c_void, CStr},
    path::{Path, PathBuf},
    sync::{Mutex, Once},
    time::{Duration, Instant},
};

use libsqlite3_sys as ffi;

/// Virtual-machine steps between two checks of the clock (a few microseconds of work).
const PROGRESS_STEPS: c_int = 4_000;

/// The statement-time limit of each SQLite file opened so far (absent or zero: none).
static LIMITS: Mutex<Option<HashMap<PathBuf, Duration>>> = Mutex::new(None);

static INSTALL: Once = Once::new();

thread_local! {
    /// When the statement running on this thread started.
    static STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Sets the limit for statements on the SQLite file at `path` (`None`: none), and makes sure
/// every SQLite connection opened from now on gets the handlers. Call before opening the
/// file's connections.
pub(crate) fn limit_sqlite(path: &Path, limit: Option<Duration>) {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Ok(mut limits) = LIMITS.lock() {
        let limits = limits.get_or_insert_with(HashMap::new);
        match limit {
            Some(limit) if !limit.is_zero() => limits.insert(key, limit),
            _ => limits.remove(&key),
        };
    }
    INSTALL.call_once(|| {
        // SAFETY: `on_open` has the signature SQLite calls auto extensions with, lives for
        // the whole program, and only registers callbacks on the connection it is given.
        let rc = unsafe { ffi::sqlite3_auto_extension(Some(on_open)) };
        if rc != ffi::SQLITE_OK {
            tracing::error!(rc, "cannot install the SQLite statement time limit");
        }
    });
}

/// The limit recorded for the main file of `db`.
fn limit_of(db: *mut ffi::sqlite3) -> Option<Duration> {
    // SAFETY: `db` is the open connection SQLite passes to `on_open`; the name is a static C
    // string; the returned file name stays valid while the connection is open, and is copied
    // before returning.
    let name = unsafe { ffi::sqlite3_db_filename(db, c"main".as_ptr()) };
    if name.is_null() {
        return None;
    }
    // SAFETY: non-null, NUL-terminated, owned by SQLite for the connection's life.
    let name = unsafe { CStr::from_ptr(name) }.to_str().ok()?;
    let path = Path::new(name);
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    LIMITS.lock().ok()?.as_ref()?.get(&key).copied()
}

/// Called by SQLite for each connection it opens: installs the trace and progress callbacks
/// when the connection's file has a limit.
unsafe extern "C" fn on_open(
    db: *mut ffi::sqlite3,
    _error: *mut *mut c_char,
    _api: *const ffi::sqlite3_api_routines,
) -> c_int {
    let Some(limit) = limit_of(db) else {
        return ffi::SQLITE_OK;
    };
    // The limit travels as the context pointer's value (microseconds), not as an allocation.
    let micros = usize::try_from(limit.as_micros())
        .unwrap_or(usize::MAX)
        .max(1);
    // SAFETY: `db` is open; the callbacks are `'static` functions that never touch the
    // connection; the context is a plain integer, never dereferenced.
    unsafe {
        ffi::sqlite3_trace_v2(
            db,
            ffi::SQLITE_TRACE_STMT as c_uint,
            Some(on_statement),
            std::ptr::null_mut(),
        );
        ffi::sqlite3_progress_handler(db, PROGRESS_STEPS, Some(on_progress), micros as *mut c_void);
    }
    ffi::SQLITE_OK
}

/// A statement starts running on this thread.
unsafe extern "C" fn on_statement(
    _kind: c_uint,
    _ctx: *mut c_void,
    _statement: *mut c_void,
    _sql: *mut c_void,
) -> c_int {
    STARTED.with(|s| s.set(Some(Instant::now())));
    0
}

/// Non-zero interrupts the running statement (`SQLITE_INTERRUPT`).
unsafe extern "C" fn on_progress(ctx: *mut c_void) -> c_int {
    let limit = Duration::from_micros(ctx as usize as u64);
    STARTED.with(|s| s.get().is_some_and(|at| at.elapsed() > limit)) as c_int
}

/// The statements PostgreSQL connections run when they open: the limit as
/// `statement_timeout` (milliseconds, at least 1; `0` turns it off).
pub(crate) fn postgres_setup(limit: Option<Duration>) -> String {
    let millis = limit.map_or(0, |l| l.as_millis().clamp(1, i32::MAX as u128));
    format!("SET statement_timeout = {millis}")
}

/// Whether a database error's message says a statement ran out of time: PostgreSQL's
/// `query_canceled` (statement timeout or a cancel request) or SQLite's `SQLITE_INTERRUPT`.
pub(crate) fn is_timeout(message: &str) -> bool {
    message.contains("canceling statement due to") || message.eq_ignore_ascii_case("interrupted")
}
