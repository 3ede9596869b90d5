//! The webhook list: each webhook's receiver, events and status, and where its delivery stands
//! (last delivery, the current run of failures, when it was disabled), with a button to enable
//! a disabled one (docs/webhooks.md).

use maud::{html, Markup};
use tessera_domain::{store::StoredWebhook, webhook::WebhookStatus, Page};

use super::components::{csrf, pager, when};

/// The list.
pub(crate) fn list(page: &Page<StoredWebhook>, token: &str, enabled: Option<String>) -> Markup {
    html! {
        @if let Some(id) = enabled { p.notice role="status" { "Webhook " code { (id) } " was enabled: delivery resumes where it stopped." } }
        p.lead { "Webhooks are created and changed through the API (POST /webhooks). Events are signed; the public key is at /webhooks/signing-key." }
        @if page.items.is_empty() {
            p.empty { "No webhook." }
        } @else {
            div.table-wrap {
                table {
                    caption.visually-hidden { "Webhooks" }
                    thead { tr {
                        th scope="col" { "Name" } th scope="col" { "Receiver" } th scope="col" { "Events" }
                        th scope="col" { "Status" } th scope="col" { "Delivery" }
                    } }
                    tbody {
                        @for hook in &page.items {
                            (row(hook, token))
                        }
                    }
                }
            }
        }
        (pager(page, "/console/webhooks?"))
    }
}

fn row(stored: &StoredWebhook, token: &str) -> Markup {
    let (w, c) = (&stored.webhook, &stored.cursor);
    let events: Vec<&str> = w.settings.events.iter().map(|e| e.as_str()).collect();
    html! {
        tr {
            td { (w.settings.name) br; code.mono { (w.id) } }
            td.mono.wrap { (w.settings.url) }
            td.mono { (events.join(", ")) }
            td {
                @match w.status {
                    WebhookStatus::Enabled => { "enabled" }
                    WebhookStatus::Disabled => {
                        strong { "disabled" }
                        @if let Some(at) = c.disabled_at { br; "by the deliverer at " (when(at)) }
                        form method="post" action={ "/console/webhooks/" (w.id) "/enable" } {
                            (csrf(token))
                            button type="submit" { "Enable" }
                        }
                    }
                }
            }
            td {
                @if let Some(at) = c.last_delivered_at { "last delivered " (when(at)) } @else { "nothing delivered yet" }
                @if let Some(since) = c.failing_since {
                    br; strong { "failing since " (when(since)) } " (" (c.attempts) " attempts)"
                    @if let Some(why) = &c.last_error { br; (why) }
                    @if let Some(next) = c.next_attempt_at { br; "next attempt " (when(next)) }
                }
            }
        }
    }
}
