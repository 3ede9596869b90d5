//! Webhooks (docs/webhooks.md): what a tenant registers, the events it can subscribe to, the
//! envelope a receiver gets and how it is signed. Delivery itself (reading the audit chain,
//! sending, retrying) is the `tessera-webhooks` crate's; the use-cases are
//! [`crate::Vault`]'s.

mod entity;
mod envelope;
mod event_type;
pub mod signing;

pub use entity::{
    check_input, check_url, Webhook, WebhookCursor, WebhookInput, WebhookSettings, WebhookStatus,
    MAX_EMAIL_CHARS, MAX_NAME_CHARS, MAX_URL_CHARS, MAX_WEBHOOKS_PER_TENANT,
};
pub use envelope::{stable_json, WebhookEvent};
pub use event_type::{UnknownEventType, WebhookEventType};
