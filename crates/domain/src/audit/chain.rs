//! The hash chain that makes a tenant's trail tamper-evident.
//!
//! Each event's hash is `SHA-256("tessera-audit-v1\n" ‖ prev_hash ‖ canonical(event))`, where
//! `canonical` is the event's fields (with its `seq`) as JSON with keys in byte order and no
//! whitespace, timestamps as RFC 3339 with six fractional digits. The first event's
//! `prev_hash` is all zeros, or — once retention has removed older events — the hash of the
//! last removed one, which the chain's head keeps. Altering an event changes its hash;
//! deleting one breaks the next event's link or the head; re-hashing everything after an edit
//! still disagrees with the head unless that is forged too, which is why operators should
//! copy the heads `api audit verify` prints somewhere the database's writers cannot reach.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::event::{AuditEvent, ChainedEvent};
use crate::{ids::TenantId, timestamp};

/// The `prev_hash` of a chain's first event.
pub const GENESIS: [u8; 32] = [0; 32];

const DOMAIN: &[u8] = b"tessera-audit-v1\n";

/// The canonical form of an event: its fields in byte order of their names, so that serde's
/// compact output is exactly the canonical JSON (sorted keys, no whitespace) without building
/// a JSON tree per event on the hot path.
#[derive(serde::Serialize)]
struct Canonical<'a> {
    action: &'static str,
    actor: String,
    id: Uuid,
    occurred_at: String,
    outcome: &'static str,
    proxy_id: Option<Uuid>,
    reason: Option<&'a str>,
    request_id: Option<&'a str>,
    resource_ids: &'a [Uuid],
    seq: i64,
    tenant_id: Option<Uuid>,
}

fn canonical(seq: i64, event: &AuditEvent) -> Vec<u8> {
    let fields = Canonical {
        action: event.action.as_str(),
        actor: event.actor.to_wire(),
        id: event.id,
        occurred_at: timestamp::format(event.occurred_at),
        outcome: event.outcome.as_str(),
        proxy_id: event.proxy_id.map(|p| *p.as_uuid()),
        reason: event.reason.as_deref(),
        request_id: event.request_id.as_deref(),
        resource_ids: &event.resource_ids,
        seq,
        tenant_id: event.tenant_id.map(|t| *t.as_uuid()),
    };
    // Strings, numbers, arrays and nulls always serialise.
    serde_json::to_vec(&fields).unwrap_or_default()
}

/// The hash of `event` at position `seq` after an event hashing to `prev`.
pub fn link_hash(prev: &[u8; 32], seq: i64, event: &AuditEvent) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(DOMAIN);
    hasher.update(prev);
    hasher.update(canonical(seq, event));
    hasher.finalize().into()
}

/// Lowercase hex of a hash.
pub fn to_hex(bytes: &[u8; 32]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Chains `events` after `head`, advancing it: the events as they are to be stored.
pub fn extend(head: &mut ChainHead, events: &[AuditEvent]) -> Vec<ChainedEvent> {
    events
        .iter()
        .map(|event| {
            let seq = head.last_seq + 1;
            let hash = link_hash(&head.last_hash, seq, event);
            let chained = ChainedEvent {
                event: event.clone(),
                seq,
                prev_hash: head.last_hash,
                hash,
            };
            head.last_seq = seq;
            head.last_hash = hash;
            head.last_event_id = Some(event.id);
            chained
        })
        .collect()
}

/// Where one tenant's chain stands: its last event, and what retention removed before its
/// first remaining one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// The chain's tenant (`None`: the deployment's chain of refusals naming no tenant).
    pub tenant_id: Option<TenantId>,
    /// The last event's `seq` (0: none yet).
    pub last_seq: i64,
    /// The last event's hash ([`GENESIS`] when none).
    pub last_hash: [u8; 32],
    /// The last event's id.
    pub last_event_id: Option<Uuid>,
    /// Events up to this `seq` were removed by retention.
    pub pruned_seq: i64,
    /// The hash of the last removed event ([`GENESIS`] when none).
    pub pruned_hash: [u8; 32],
}

impl ChainHead {
    /// A chain without events.
    pub fn empty(tenant_id: Option<TenantId>) -> Self {
        Self {
            tenant_id,
            last_seq: 0,
            last_hash: GENESIS,
            last_event_id: None,
            pruned_seq: 0,
            pruned_hash: GENESIS,
        }
    }
}

/// The first place a chain does not hold.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BrokenLink {
    /// The chain's tenant.
    pub tenant_id: Option<TenantId>,
    /// The position at which the chain breaks.
    pub seq: i64,
    /// The event at that position, when it is there (else the one the head names, if any).
    pub event_id: Option<Uuid>,
    /// What is wrong, for a person.
    pub problem: String,
}

/// Re-walks one chain: feed its stored events in `seq` order, then [`ChainCheck::finish`].
#[derive(Debug)]
pub struct ChainCheck {
    head: ChainHead,
    next_seq: i64,
    prev_hash: [u8; 32],
    checked: u64,
}

impl ChainCheck {
    /// Starts at what retention left: the event after `head.pruned_seq`.
    pub fn new(head: ChainHead) -> Self {
        Self {
            next_seq: head.pruned_seq + 1,
            prev_hash: head.pruned_hash,
            head,
            checked: 0,
        }
    }

    /// The position of the first event the walk expects (the one after the pruned ones).
    pub fn start_seq(&self) -> i64 {
        self.head.pruned_seq + 1
    }

    /// How many events held so far.
    pub fn checked(&self) -> u64 {
        self.checked
    }

    fn broken(&self, seq: i64, event_id: Option<Uuid>, problem: String) -> BrokenLink {
        BrokenLink {
            tenant_id: self.head.tenant_id,
            seq,
            event_id,
            problem,
        }
    }

    /// Checks the next stored event.
    pub fn check(&mut self, stored: &ChainedEvent) -> Result<(), BrokenLink> {
        let id = Some(stored.event.id);
        if stored.seq != self.next_seq {
            let problem = if stored.seq > self.next_seq {
                format!(
                    "events {} to {} are missing before this one",
                    self.next_seq,
                    stored.seq - 1
                )
            } else {
                format!("out of order: expected position {}", self.next_seq)
            };
            return Err(self.broken(stored.seq, id, problem));
        }
        if stored.prev_hash != self.prev_hash {
            return Err(self.broken(
                stored.seq,
                id,
                "its prev_hash is not the previous event's hash (the previous event was altered or replaced)".into(),
            ));
        }
        if link_hash(&stored.prev_hash, stored.seq, &stored.event) != stored.hash {
            return Err(self.broken(
                stored.seq,
                id,
                "its contents do not match its hash (the event was altered)".into(),
            ));
        }
        self.next_seq += 1;
        self.prev_hash = stored.hash;
        self.checked += 1;
        Ok(())
    }

    /// Checks that the walk reached the head: no event after the last one seen was removed.
    pub fn finish(self) -> Result<u64, BrokenLink> {
        let last_seen = self.next_seq - 1;
        if last_seen != self.head.last_seq {
            return Err(self.broken(
                last_seen + 1,
                self.head.last_event_id,
                format!(
                    "the chain ends at position {last_seen} but its head records {}: later events are missing",
                    self.head.last_seq
                ),
            ));
        }
        if self.prev_hash != self.head.last_hash {
            return Err(self.broken(
                last_seen,
                self.head.last_event_id,
                "the last event's hash is not the one the chain's head records (the end of the chain was rewritten)".into(),
            ));
        }
        Ok(self.checked)
    }
}

/// The JSON form of a head, as `api audit verify` prints it (an anchor to keep elsewhere).
pub fn head_json(head: &ChainHead) -> Value {
    json!({
        "tenant_id": head.tenant_id.map(|t| t.to_string()),
        "last_seq": head.last_seq,
        "last_hash": to_hex(&head.last_hash),
    })
}

#[cfg(test)]
mod tests {
    /// The fast encoding is byte for byte the canonical JSON of the event's fields.
    #[test]
    fn the_encoding_is_canonical_json() {
        let tenant = TenantId::new();
        let mut event = AuditEvent::denied(
            Some(tenant),
            AuditAction::TokenDetokenized,
            Actor::Anonymous,
            vec![Uuid::new_v4(), Uuid::new_v4()],
            "a \"quoted\" reason \u{e9}\n",
        )
        .with_request_id("req-1");
        event.proxy_id = Some(crate::ProxyId::new());
        let tree = json!({
            "id": event.id.to_string(),
            "tenant_id": event.tenant_id.map(|t| t.to_string()),
            "seq": 7,
            "occurred_at": timestamp::format(event.occurred_at),
            "action": event.action.as_str(),
            "outcome": event.outcome.as_str(),
            "actor": event.actor.to_wire(),
            "resource_ids": event.resource_ids.iter().map(Uuid::to_string).collect::<Vec<_>>(),
            "proxy_id": event.proxy_id.map(|p| p.to_string()),
            "request_id": event.request_id,
            "reason": event.reason,
        });
        let mut expected = Vec::new();
        crate::token::canonical_json(&tree, &mut expected);
        assert_eq!(
            String::from_utf8(canonical(7, &event)).expect("utf-8"),
            String::from_utf8(expected).expect("utf-8")
        );
        let mut none = event.clone();
        (none.proxy_id, none.reason, none.request_id, none.tenant_id) = (None, None, None, None);
        assert!(String::from_utf8(canonical(1, &none))
            .expect("utf-8")
            .contains(r#""proxy_id":null,"reason":null,"request_id":null"#));
    }

    use super::*;
    use crate::audit::{Actor, AuditAction};

    fn events(n: usize, tenant: TenantId) -> Vec<AuditEvent> {
        (0..n)
            .map(|_| {
                AuditEvent::success(
                    tenant,
                    AuditAction::TokenRead,
                    Actor::Anonymous,
                    vec![Uuid::new_v4()],
                )
            })
            .collect()
    }

    fn walk(head: &ChainHead, stored: &[ChainedEvent]) -> Result<u64, BrokenLink> {
        let mut check = ChainCheck::new(head.clone());
        for e in stored {
            check.check(e)?;
        }
        check.finish()
    }

    #[test]
    fn an_intact_chain_verifies() {
        let tenant = TenantId::new();
        let mut head = ChainHead::empty(Some(tenant));
        let mut stored = extend(&mut head, &events(3, tenant));
        stored.extend(extend(&mut head, &events(2, tenant)));
        assert_eq!(
            stored.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert_eq!(walk(&head, &stored), Ok(5));
    }

    #[test]
    fn edits_deletions_and_truncation_are_named() {
        let tenant = TenantId::new();
        let mut head = ChainHead::empty(Some(tenant));
        let stored = extend(&mut head, &events(4, tenant));

        let mut edited = stored.clone();
        edited[1].event.actor = Actor::Operator;
        let broken = walk(&head, &edited).expect_err("edit");
        assert_eq!((broken.seq, broken.event_id), (2, Some(stored[1].event.id)));

        let mut rehashed = edited.clone();
        rehashed[1].hash = link_hash(&rehashed[1].prev_hash, 2, &rehashed[1].event);
        let broken = walk(&head, &rehashed).expect_err("re-hashed edit");
        assert_eq!((broken.seq, broken.event_id), (3, Some(stored[2].event.id)));

        let mut deleted = stored.clone();
        deleted.remove(2);
        let broken = walk(&head, &deleted).expect_err("deletion");
        assert_eq!((broken.seq, broken.event_id), (4, Some(stored[3].event.id)));
        assert!(broken.problem.contains("3 to 3"), "{}", broken.problem);

        let truncated = &stored[..3];
        let broken = walk(&head, truncated).expect_err("truncation");
        assert_eq!((broken.seq, broken.event_id), (4, Some(stored[3].event.id)));
    }

    #[test]
    fn a_pruned_chain_starts_from_its_anchor() {
        let tenant = TenantId::new();
        let mut head = ChainHead::empty(Some(tenant));
        let stored = extend(&mut head, &events(5, tenant));
        head.pruned_seq = 2;
        head.pruned_hash = stored[1].hash;
        assert_eq!(walk(&head, &stored[2..]), Ok(3));
        // Removing more than retention recorded is a break.
        assert!(walk(&head, &stored[3..]).is_err());
    }
}
