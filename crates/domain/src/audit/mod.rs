//! What is audited: one event per audited operation and outcome ([`AuditEvent`]), the
//! actions and actors it names, and the port through which the vault and its edges hand
//! events to the trail ([`AuditTrail`], held as an [`AuditLog`]).
//!
//! The trail itself (the per-tenant hash chain, its encoding, the writer that commits events
//! in groups, listing and verification) is the `tessera-audit` crate, which implements
//! [`AuditTrail`] over storage; docs/architecture.md shows where each part lives.

mod action;
mod event;
mod filter;
mod log;
mod report;
mod resource_id;
mod trail;

pub use action::{AuditAction, UnknownAction};
pub use event::{Actor, AuditEvent, ChainedEvent, Outcome, Pruned, MAX_TEXT_CHARS};
pub use filter::AuditFilter;
pub use log::{AuditLog, Pending};
pub use report::{BrokenLink, ChainReport, VerifyReport};
pub use resource_id::ResourceId;
pub use trail::{AuditError, AuditStats, AuditTrail, CommitWait, Durability};
