//! Events encoded where they are made, before they have a place in their chain.
//!
//! An event's canonical encoding ([`crate::canonical`]) holds its position `seq`, which only
//! the writer knows, at commit. Every other byte is known as soon as the event is: so the
//! thread that makes an event encodes it at once, into one buffer with the position left out,
//! and the writer only writes the position in between while it seals the block. The result is
//! byte for byte the canonical encoding (a test pins it), so what is hashed and stored does
//! not change.

use time::OffsetDateTime;
use uuid::Uuid;

use crate::canonical;
use tessera_domain::audit::AuditEvent;
use tessera_domain::ids::TenantId;

/// Where one encoded event lies in its buffer.
#[derive(Debug, Clone, Copy)]
struct Slot {
    chain: Option<TenantId>,
    id: Uuid,
    occurred_at: OffsetDateTime,
    /// Its first byte.
    start: usize,
    /// Where the position goes: `bytes[start..at]` ends with `"seq":`.
    at: usize,
    /// One past its last byte.
    end: usize,
}

/// Events encoded one after another in one buffer, in the order they were pushed.
#[derive(Debug, Default)]
pub struct EncodedEvents {
    bytes: Vec<u8>,
    slots: Vec<Slot>,
}

/// One event of an [`EncodedEvents`], ready to be placed.
#[derive(Debug, Clone, Copy)]
pub struct EncodedEvent<'a> {
    /// Its chain (`None`: the deployment's chain of refusals naming no tenant).
    pub chain: Option<TenantId>,
    /// Its id.
    pub id: Uuid,
    /// When it happened.
    pub occurred_at: OffsetDateTime,
    before: &'a [u8],
    after: &'a [u8],
}

impl EncodedEvent<'_> {
    /// Appends the event's canonical encoding at position `seq` to `out`.
    pub fn write_line(&self, seq: i64, out: &mut Vec<u8>) {
        out.extend_from_slice(self.before);
        let mut digits = itoa::Buffer::new();
        out.extend_from_slice(digits.format(seq).as_bytes());
        out.extend_from_slice(self.after);
    }

    /// Bytes of its encoding, but for the position.
    pub fn len(&self) -> usize {
        self.before.len() + self.after.len()
    }

    /// Never: an encoding is a JSON object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl EncodedEvents {
    /// Encodes `event` after the others.
    pub fn push(&mut self, event: &AuditEvent) {
        let start = self.bytes.len();
        let at = canonical::encode_unplaced(event, &mut self.bytes);
        self.slots.push(Slot {
            chain: event.tenant_id,
            id: event.id,
            occurred_at: event.occurred_at,
            start,
            at,
            end: self.bytes.len(),
        });
    }

    /// Copies `event` after the others.
    pub fn push_encoded(&mut self, event: &EncodedEvent<'_>) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(event.before);
        let at = self.bytes.len();
        self.bytes.extend_from_slice(event.after);
        self.slots.push(Slot {
            chain: event.chain,
            id: event.id,
            occurred_at: event.occurred_at,
            start,
            at,
            end: self.bytes.len(),
        });
    }

    /// How many events it holds.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Bytes the encodings take.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// Forgets every event, keeping the memory.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.slots.clear();
    }

    /// The `i`th event.
    ///
    /// # Panics
    /// When `i` is out of range.
    pub fn get(&self, i: usize) -> EncodedEvent<'_> {
        let s = &self.slots[i];
        EncodedEvent {
            chain: s.chain,
            id: s.id,
            occurred_at: s.occurred_at,
            before: &self.bytes[s.start..s.at],
            after: &self.bytes[s.at..s.end],
        }
    }

    /// The events in order.
    pub fn iter(&self) -> impl Iterator<Item = EncodedEvent<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// The events of `events`, encoded.
    pub fn of(events: &[AuditEvent]) -> Self {
        let mut out = Self::default();
        for e in events {
            out.push(e);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::encode;
    use tessera_domain::{
        audit::{Actor, AuditAction},
        ids::ProxyId,
    };

    #[test]
    fn placing_an_encoded_event_gives_its_canonical_encoding() {
        let tenant = TenantId::new();
        let tricky = "\",\"seq\":0,\"tenant_id\":\"x\"}";
        let events = [
            AuditEvent::success(
                tenant,
                AuditAction::TokenDetokenized,
                Actor::Anonymous,
                vec![Uuid::new_v4().into(), Uuid::new_v4().into()],
            )
            .with_proxy(ProxyId::new())
            .with_request_id(tricky)
            .with_destination(Some("api.example.com:443"), true),
            AuditEvent::denied(
                None,
                AuditAction::TokenRead,
                Actor::Operator,
                vec![],
                tricky,
            ),
            AuditEvent::pruning(Some(tenant), 41, [7; 32], 41),
        ];
        let encoded = EncodedEvents::of(&events);
        let mut copied = EncodedEvents::default();
        for (i, e) in encoded.iter().enumerate() {
            copied.push_encoded(&e);
            assert_eq!(e.chain, events[i].tenant_id);
        }
        for seq in [1_i64, 9, 10, 123_456_789, i64::MAX] {
            for (i, event) in events.iter().enumerate() {
                let mut line = Vec::new();
                encoded.get(i).write_line(seq, &mut line);
                assert_eq!(line, encode(seq, event), "event {i} at {seq}");
                let mut again = Vec::new();
                copied.get(i).write_line(seq, &mut again);
                assert_eq!(again, line);
            }
        }
    }
}
