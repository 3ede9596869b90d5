//! # tessera-webhooks
//!
//! Webhook delivery (docs/webhooks.md). Events are read from each tenant's audit chain, not
//! written beside it: a webhook keeps a cursor into its tenant's chain, so an event is
//! delivered only once it is committed, in chain order, and nothing is written on the request
//! path for it.
//!
//! ```text
//!   Deliverer ── every few s ──► enabled webhooks ──► take free leases ──► HookTask per webhook
//!   HookTask ──► chain head ──► blocks after the cursor (links checked) ──► WebhookEvent
//!            ──► sign (RSA-PSS) ──► Transport (SSRF-guarded client) ──► save cursor + lease
//! ```
//!
//! Sending is behind [`Transport`], so this crate holds no HTTP client: the binaries give it
//! the gateway's outbound client.

mod backoff;
mod chain;
mod deliverer;
mod hook_send;
mod hook_task;
mod stats;
mod transport;

pub use backoff::{Policy, EARLY_CAP, EARLY_SPAN, LATE_CAP};
pub use chain::{read_after, ChainError, Linked};
pub use deliverer::{Deliverer, DelivererConfig, Running};
pub use stats::{DeliveryStats, HookFigures};
pub use transport::{Outgoing, SendFailure, Transport};
