//! What one audit event says: who did what to which resources, and whether it was allowed.
//! Never token data, keys, proxy configuration values or request bodies: only ids, names of
//! actions and the public reason of a refusal.

use serde::{Serialize, Serializer};
use time::OffsetDateTime;
use uuid::Uuid;

use super::action::AuditAction;
use crate::{
    access::Principal,
    audit::ResourceId,
    ids::{ApplicationId, ProxyId, TenantId},
    timestamp,
};

/// Whether the operation was carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It was done.
    Success,
    /// It was refused for lack of a valid key (401) or of a permission (403).
    Denied,
}

impl Outcome {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Denied => "denied",
        }
    }

    /// Parses the wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "success" => Some(Outcome::Success),
            "denied" => Some(Outcome::Denied),
            _ => None,
        }
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Who acted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Actor {
    /// An authenticated application (its id is what is recorded).
    Application(ApplicationId),
    /// A caller without a valid key: an anonymous proxy's caller, or a refused key.
    Anonymous,
    /// The operator, through the command line (`api rotate-master-key`).
    Operator,
    /// The service itself (retention).
    System,
}

impl Actor {
    /// The recorded form: the application id, `anonymous` or `operator`.
    pub fn to_wire(self) -> String {
        match self {
            Actor::Application(id) => id.to_string(),
            Actor::Anonymous => "anonymous".into(),
            Actor::Operator => "operator".into(),
            Actor::System => "system".into(),
        }
    }

    /// Parses the recorded form.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "anonymous" => Some(Actor::Anonymous),
            "operator" => Some(Actor::Operator),
            "system" => Some(Actor::System),
            other => other.parse().ok().map(Actor::Application),
        }
    }
}

impl From<&Principal> for Actor {
    fn from(p: &Principal) -> Self {
        Actor::Application(p.application_id())
    }
}

impl Serialize for Actor {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_wire())
    }
}

/// The longest recorded `reason` and `request_id`, in characters: both come from outside (a
/// refusal's message, the caller's `X-Request-Id`) and must not bloat the trail.
pub const MAX_TEXT_CHARS: usize = 200;

/// One event, before it is chained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditEvent {
    /// Unique id.
    pub id: Uuid,
    /// The tenant whose chain holds it; `None` for a refusal that names no tenant (a
    /// management call with an unknown key, a proxy call with an unknown proxy key), kept in
    /// the deployment's own chain.
    pub tenant_id: Option<TenantId>,
    /// When it happened (UTC, whole microseconds).
    #[serde(with = "timestamp::serde_rfc3339")]
    pub occurred_at: OffsetDateTime,
    /// What was done.
    pub action: AuditAction,
    /// Allowed or refused.
    pub outcome: Outcome,
    /// Who.
    pub actor: Actor,
    /// The tokens, applications, proxies or tenant concerned, in the operation's order.
    pub resource_ids: Vec<ResourceId>,
    /// The proxy through which it happened, for gateway and `req.svc` events.
    pub proxy_id: Option<ProxyId>,
    /// The request's `X-Request-Id`.
    pub request_id: Option<String>,
    /// Why a denied attempt was refused.
    pub reason: Option<String>,
    /// How many identical refusals this event stands for, when refusals were folded into one
    /// (a flood of unknown keys; see the writer's aggregation). `None`: one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// On an `audit.pruned` event: what retention removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pruned: Option<Pruned>,
    /// On gateway events: the destination's `host:port`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// On gateway events: the proxy was ephemeral (named by the caller's `SVC-PROXY-URL`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ephemeral: bool,
    /// On calls from a browser: the page's `Origin` (a token created through the hosted card
    /// fields names their origin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// What one pruning removed: every event up to `through_seq`, the last of which hashed to
/// `last_hash` (the anchor the chain's remaining first event links to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Pruned {
    /// The last removed position.
    pub through_seq: i64,
    /// The last removed event's hash.
    #[serde(serialize_with = "hex")]
    pub last_hash: [u8; 32],
}

impl AuditEvent {
    /// A successful `action` by `actor` now, on `resource_ids`.
    pub fn success(
        tenant_id: TenantId,
        action: AuditAction,
        actor: Actor,
        resource_ids: Vec<ResourceId>,
    ) -> Self {
        Self {
            id: Uuid::new_v4(),
            tenant_id: Some(tenant_id),
            occurred_at: timestamp::now(),
            action,
            outcome: Outcome::Success,
            actor,
            resource_ids,
            proxy_id: None,
            request_id: None,
            reason: None,
            count: None,
            pruned: None,
            destination: None,
            ephemeral: false,
            origin: None,
        }
    }

    /// A successful `action` recorded in the deployment's own chain (an operator's act on a
    /// whole tenant, such as its deletion).
    pub fn deployment(action: AuditAction, actor: Actor, resource_ids: Vec<ResourceId>) -> Self {
        let mut event = Self::denied(None, action, actor, resource_ids, "");
        event.outcome = Outcome::Success;
        event.reason = None;
        event
    }

    /// A refused attempt at `action` now, with the public `reason`.
    pub fn denied(
        tenant_id: Option<TenantId>,
        action: AuditAction,
        actor: Actor,
        resource_ids: Vec<ResourceId>,
        reason: &str,
    ) -> Self {
        Self {
            id: Uuid::new_v4(),
            tenant_id,
            occurred_at: timestamp::now(),
            action,
            outcome: Outcome::Denied,
            actor,
            resource_ids,
            proxy_id: None,
            request_id: None,
            reason: Some(clip(reason)),
            count: None,
            pruned: None,
            destination: None,
            ephemeral: false,
            origin: None,
        }
    }

    /// The event retention appends to `tenant_id`'s chain after removing its events up to
    /// `through_seq`, the last of which hashed to `last_hash`; `removed` of them.
    pub fn pruning(
        tenant_id: Option<TenantId>,
        through_seq: i64,
        last_hash: [u8; 32],
        removed: u64,
    ) -> Self {
        Self {
            id: Uuid::new_v4(),
            tenant_id,
            occurred_at: timestamp::now(),
            action: AuditAction::AuditPruned,
            outcome: Outcome::Success,
            actor: Actor::System,
            resource_ids: Vec::new(),
            proxy_id: None,
            request_id: None,
            reason: Some(format!(
                "retention removed {removed} events up to position {through_seq}"
            )),
            count: None,
            pruned: Some(Pruned {
                through_seq,
                last_hash,
            }),
            destination: None,
            ephemeral: false,
            origin: None,
        }
    }

    /// Sets what an allowed event says beside its action, in `reason` (clipped to
    /// [`MAX_TEXT_CHARS`]): a write that set a mask showing whole fields of the data names
    /// them (docs/api.md, "Masks").
    pub fn with_note(mut self, note: &str) -> Self {
        self.reason = Some(clip(note));
        self
    }

    /// Sets the request id (clipped to [`MAX_TEXT_CHARS`]).
    pub fn with_request_id(mut self, request_id: &str) -> Self {
        self.request_id = Some(clip(request_id));
        self
    }

    /// Sets the proxy.
    pub fn with_proxy(mut self, proxy_id: ProxyId) -> Self {
        self.proxy_id = Some(proxy_id);
        self
    }

    /// Sets where a gateway request went (`host:port`, clipped to [`MAX_TEXT_CHARS`]) and
    /// whether its proxy was ephemeral.
    pub fn with_destination(mut self, destination: Option<&str>, ephemeral: bool) -> Self {
        self.destination = destination.map(clip);
        self.ephemeral = ephemeral;
        self
    }

    /// Sets the browser origin the call came from (clipped to [`MAX_TEXT_CHARS`]).
    pub fn with_origin(mut self, origin: Option<&str>) -> Self {
        self.origin = origin.map(clip);
        self
    }
}

fn clip(text: &str) -> String {
    text.chars().take(MAX_TEXT_CHARS).collect()
}

/// An event as stored: with its place in its tenant's chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainedEvent {
    /// The event.
    #[serde(flatten)]
    pub event: AuditEvent,
    /// Its position in the chain, from 1.
    pub seq: i64,
    /// The previous event's hash (all zeros for the first).
    #[serde(serialize_with = "hex")]
    pub prev_hash: [u8; 32],
    /// SHA-256 over `prev_hash` and the event's canonical encoding.
    #[serde(serialize_with = "hex")]
    pub hash: [u8; 32],
}

fn hex<S: Serializer>(bytes: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_round_trip_by_name() {
        for a in AuditAction::ALL {
            assert_eq!(a.as_str().parse::<AuditAction>(), Ok(*a));
            assert_eq!(
                serde_json::to_string(a).expect("json"),
                format!("\"{}\"", a.as_str())
            );
        }
        assert_eq!(AuditAction::ALL.len(), 34);
        assert!("token.stolen".parse::<AuditAction>().is_err());
    }

    #[test]
    fn actors_round_trip() {
        let app = ApplicationId::new();
        for actor in [
            Actor::Application(app),
            Actor::Anonymous,
            Actor::Operator,
            Actor::System,
        ] {
            assert_eq!(Actor::parse(&actor.to_wire()), Some(actor));
        }
        assert_eq!(Actor::parse("someone"), None);
    }

    #[test]
    fn outside_text_is_clipped() {
        let long = "x".repeat(1000);
        let e = AuditEvent::denied(
            None,
            AuditAction::TokenRead,
            Actor::Anonymous,
            vec![],
            &long,
        )
        .with_request_id(&long);
        assert_eq!(e.reason.as_deref().map(str::len), Some(MAX_TEXT_CHARS));
        assert_eq!(e.request_id.as_deref().map(str::len), Some(MAX_TEXT_CHARS));
    }
}
