//! What `GET /audit-events` narrows by.

use time::OffsetDateTime;

use super::{Actor, AuditAction, AuditEvent, Outcome, ResourceId};

/// What `GET /audit-events` narrows by; every given filter must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Any of these actions (empty: all).
    pub actions: Vec<AuditAction>,
    /// Events naming this resource.
    pub resource_id: Option<ResourceId>,
    /// Events by this actor.
    pub actor: Option<Actor>,
    /// Events with this outcome.
    pub outcome: Option<Outcome>,
    /// Events at or after this instant.
    pub from: Option<OffsetDateTime>,
    /// Events before this instant.
    pub to: Option<OffsetDateTime>,
}

impl AuditFilter {
    /// Whether nothing narrows the list.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Whether `event` passes every given filter.
    pub fn matches(&self, event: &AuditEvent) -> bool {
        (self.actions.is_empty() || self.actions.contains(&event.action))
            && self
                .resource_id
                .as_ref()
                .is_none_or(|id| event.resource_ids.contains(id))
            && self.actor.is_none_or(|a| a == event.actor)
            && self.outcome.is_none_or(|o| o == event.outcome)
            && self.from.is_none_or(|from| event.occurred_at >= from)
            && self.to.is_none_or(|to| event.occurred_at < to)
    }
}
