//! Folding floods of identical refusals (unknown-key 401s added thousands
//! of events a second to the deployment chain, bounded only by retention).
//!
//! The first refusal of a kind — same chain, action, actor, reason and proxy — is recorded
//! at once, as every event is. Identical refusals during the next [`WINDOW`] are counted, not
//! recorded one by one; when the window closes, one event stands for them, with `count` set
//! and up to [`KEPT_RESOURCES`] of the resources they named. A flood thus costs one event per
//! kind per window, whatever its rate, and the trail still says how many attempts there were.
//! Folded refusals are acknowledged at once: one lost in a crash before its window closed is
//! the price (documented in operations.md).

use std::{collections::HashMap, time::Duration};

// tokio's clock: the same as the system's, but pausable in tests.
use tokio::time::Instant;

use uuid::Uuid;

use tessera_domain::audit::{Actor, AuditAction, AuditEvent, Outcome};
use tessera_domain::{
    ids::{ProxyId, TenantId},
    timestamp,
};

/// How long identical refusals are folded into one event.
pub const WINDOW: Duration = Duration::from_secs(10);
/// Most resource ids an aggregate event names.
const KEPT_RESOURCES: usize = 10;
/// Most kinds folded at once; beyond, refusals are recorded one by one.
const MAX_KINDS: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Kind {
    tenant_id: Option<TenantId>,
    action: AuditAction,
    actor: Actor,
    reason: Option<String>,
    proxy_id: Option<ProxyId>,
}

impl Kind {
    fn of(event: &AuditEvent) -> Self {
        Self {
            tenant_id: event.tenant_id,
            action: event.action,
            actor: event.actor,
            reason: event.reason.clone(),
            proxy_id: event.proxy_id,
        }
    }
}

#[derive(Debug)]
struct Window {
    closes: Instant,
    folded: u32,
    resources: Vec<tessera_domain::audit::ResourceId>,
}

/// The open windows.
#[derive(Debug, Default)]
pub(crate) struct Denials {
    open: HashMap<Kind, Window>,
}

impl Denials {
    /// Takes `event`, pushing onto `record` what is to be recorded now: the event itself when
    /// it is not a refusal, the first of its kind in a window, or one kind too many (and, when
    /// its kind's previous window had closed unnoticed, that window's aggregate first).
    /// Returns whether `event` was folded instead.
    pub(crate) fn take(
        &mut self,
        event: AuditEvent,
        now: Instant,
        record: &mut Vec<AuditEvent>,
    ) -> bool {
        if event.outcome != Outcome::Denied || event.count.is_some() {
            record.push(event);
            return false;
        }
        let kind = Kind::of(&event);
        let full = self.open.len() >= MAX_KINDS;
        match self.open.get_mut(&kind) {
            Some(window) if now < window.closes => {
                window.folded = window.folded.saturating_add(1);
                for id in &event.resource_ids {
                    if window.resources.len() < KEPT_RESOURCES && !window.resources.contains(id) {
                        window.resources.push(id.clone());
                    }
                }
                true
            }
            None if full => {
                record.push(event);
                false
            }
            _ => {
                let fresh = Window {
                    closes: now + WINDOW,
                    folded: 0,
                    resources: Vec::new(),
                };
                if let Some(closed) = self.open.insert(kind.clone(), fresh) {
                    record.extend(aggregate(&kind, closed));
                }
                record.push(event);
                false
            }
        }
    }

    /// The aggregate events of the windows closed by `now` (all of them when `all`, at
    /// shutdown); their kinds are forgotten.
    pub(crate) fn close(&mut self, now: Instant, all: bool) -> Vec<AuditEvent> {
        let mut out = Vec::new();
        self.open.retain(|kind, window| {
            if !all && now < window.closes {
                return true;
            }
            out.extend(aggregate(
                kind,
                Window {
                    closes: window.closes,
                    folded: window.folded,
                    resources: std::mem::take(&mut window.resources),
                },
            ));
            false
        });
        out
    }

    /// When the next window closes, if any is open.
    pub(crate) fn next_close(&self) -> Option<Instant> {
        self.open.values().map(|w| w.closes).min()
    }
}

/// The event standing for a closed window's folded refusals, if it folded any.
fn aggregate(kind: &Kind, window: Window) -> Option<AuditEvent> {
    (window.folded > 0).then(|| AuditEvent {
        id: Uuid::new_v4(),
        tenant_id: kind.tenant_id,
        occurred_at: timestamp::now(),
        action: kind.action,
        outcome: Outcome::Denied,
        actor: kind.actor,
        resource_ids: window.resources,
        proxy_id: kind.proxy_id,
        request_id: None,
        reason: kind.reason.clone(),
        count: Some(window.folded),
        pruned: None,
        destination: None,
        ephemeral: false,
        origin: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unknown_key() -> AuditEvent {
        AuditEvent::denied(
            None,
            AuditAction::TokenDetokenized,
            Actor::Anonymous,
            vec![Uuid::new_v4().into()],
            "the proxy key is unknown",
        )
    }

    #[test]
    fn a_flood_becomes_its_first_event_and_one_count() {
        let mut denials = Denials::default();
        let start = Instant::now();
        let mut record = Vec::new();
        assert!(
            !denials.take(unknown_key(), start, &mut record),
            "the first is recorded"
        );
        for _ in 0..999 {
            assert!(denials.take(unknown_key(), start, &mut record));
        }
        assert_eq!(record.len(), 1);
        assert!(denials.close(start, false).is_empty(), "still open");
        let closed = denials.close(start + WINDOW, false);
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].count, Some(999));
        assert_eq!(closed[0].resource_ids.len(), KEPT_RESOURCES);
        assert_eq!(
            closed[0].reason.as_deref(),
            Some("the proxy key is unknown")
        );
        assert!(denials.next_close().is_none());
        // The next refusal opens a new window; one arriving after a window closed unnoticed
        // brings that window's aggregate with it.
        let mut record = Vec::new();
        assert!(!denials.take(unknown_key(), start + WINDOW, &mut record));
        assert!(denials.take(unknown_key(), start + WINDOW, &mut record));
        assert!(!denials.take(unknown_key(), start + WINDOW * 3, &mut record));
        assert_eq!(record.len(), 3);
        assert_eq!(record[1].count, Some(1));
    }

    #[test]
    fn other_kinds_and_successes_are_not_folded() {
        let mut denials = Denials::default();
        let now = Instant::now();
        let mut record = Vec::new();
        assert!(!denials.take(unknown_key(), now, &mut record));
        let mut other = unknown_key();
        other.reason = Some("another reason".into());
        assert!(!denials.take(other, now, &mut record));
        let success = AuditEvent::success(
            TenantId::new(),
            AuditAction::TokenRead,
            Actor::Anonymous,
            vec![],
        );
        assert!(!denials.take(success.clone(), now, &mut record));
        assert!(!denials.take(success, now, &mut record));
        assert_eq!(record.len(), 4);
        assert!(denials.close(now, true).is_empty(), "nothing folded");
    }
}
