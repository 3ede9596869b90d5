//! # tessera-testkit
//!
//! What the workspace's tests share (a dev-dependency only; never in a shipped binary):
//!
//! * [`db`]: throw-away migrated databases on SQLite and PostgreSQL, and [`backend_tests!`],
//!   which runs a test once per backend (failing, not skipping, PostgreSQL under `CI=true`);
//! * [`api`]: the management API in-process (actix's test service) with request helpers;
//! * [`gateway`]: a real gateway on a socket in front of an [`upstream`] that echoes what it
//!   received, plain or over TLS with a throw-away CA;
//! * [`fuzz`]: a time-budgeted property-test runner (`FUZZ_SECONDS`);
//! * [`process`]: the binaries as real processes on a free port, and JSON calls to them;
//! * [`vault`]: tenants and tokens written straight through a vault;
//! * [`softhsm`] and [`moto`]: an HSM (SoftHSM over PKCS#11) and a KMS (moto's server) to
//!   keep the key-encrypting key in;
//! * [`tamper`]: the audit trail's stored blocks edited as someone with database access would.

#![allow(clippy::expect_used, clippy::unwrap_used)]

pub mod api;
pub mod audit_store;
pub mod db;
pub mod fuzz;
pub mod gateway;
pub mod http_client;
pub mod moto;
pub mod process;
pub mod softhsm;
pub mod tamper;
pub mod upstream;
pub mod vault;
pub mod webhook_receiver;

/// The error classes a transform may throw and the status each answers with (docs/api.md, "Transforms"),
/// as the engine's and the gateway's tests expect them.
pub const TRANSFORM_ERROR_CLASSES: [(&str, u16); 6] = [
    ("AuthenticationError", 401),
    ("AuthorizationError", 403),
    ("BadRequestError", 400),
    ("InvalidPaymentMethodError", 402),
    ("RateLimitError", 429),
    ("ServiceUnavailableError", 503),
];

/// The master key every test vault uses: one database, one master key, however many vaults a
/// test opens on it.
pub const MASTER_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// [`MASTER_KEY`] as a key.
pub fn master_key() -> tessera_domain::MasterKey {
    tessera_domain::MasterKey::from_base64(MASTER_KEY).expect("test master key")
}
