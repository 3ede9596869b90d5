//! The console's tests, one binary: HTTP-level tests of the console in-process (security
//! headers, cookies, CSRF, sessions, tenants, masking, audit events) on both backends, and
//! browser tests in a real headless Chromium sharing one browser.

mod actions;
mod browser;
mod headers;
mod newcomer;
mod sessions;
mod stored_sessions;
mod support;
mod tokens;
