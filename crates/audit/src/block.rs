//! Blocks: how the trail is stored. The writer commits whatever requests queued meanwhile in
//! one transaction; each chain's share of that batch becomes one block, one row, holding the
//! events' canonical encodings (one per line) and their hashes, each event still chained to
//! the one before it. Per event, what remains on the hot path is one encoding and one SHA-256;
//! the database does one insert per chain per batch instead of one per event.

use time::OffsetDateTime;

use crate::{
    canonical::{self, DecodeError},
    encoded::{EncodedEvent, EncodedEvents},
    head::ChainHead,
};
use tessera_domain::audit::{AuditEvent, ChainedEvent};
use tessera_domain::ids::TenantId;

/// One chain's events of one committed batch, as stored.
#[derive(Clone, PartialEq, Eq)]
pub struct AuditBlock {
    /// The chain (`None`: the deployment's chain of refusals naming no tenant).
    pub tenant_id: Option<TenantId>,
    /// The first event's position.
    pub first_seq: i64,
    /// The last event's position.
    pub last_seq: i64,
    /// When the earliest of its events occurred (events are in chain order, which is not
    /// strictly the order of their times).
    pub earliest_at: OffsetDateTime,
    /// When the latest of its events occurred.
    pub latest_at: OffsetDateTime,
    /// The hash the first event links to (the previous block's last, or the pruned anchor).
    pub prev_hash: [u8; 32],
    /// Each event's hash, 32 bytes apiece, in order.
    pub hashes: Vec<u8>,
    /// Each event's canonical encoding, one per line (`\n` never occurs inside one: JSON
    /// escapes it).
    pub lines: Vec<u8>,
    /// Why the stored lines could not be read back (a damaged or tampered record); `lines`
    /// is then empty, and verification reports the block as broken.
    pub unreadable: Option<String>,
}

impl std::fmt::Debug for AuditBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditBlock")
            .field("tenant_id", &self.tenant_id)
            .field("first_seq", &self.first_seq)
            .field("last_seq", &self.last_seq)
            .field("events", &(self.hashes.len() / 32))
            .finish_non_exhaustive()
    }
}

impl AuditBlock {
    /// The last event's hash (the block's own `prev_hash` when it holds no hash at all, which
    /// only a tampered row does).
    pub fn last_hash(&self) -> [u8; 32] {
        self.hashes
            .rchunks_exact(32)
            .next()
            .and_then(|h| h.try_into().ok())
            .unwrap_or(self.prev_hash)
    }

    /// The stored events, in order: each line with its stored hash (`None` when the hashes
    /// run out before the lines: a tampered row).
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], Option<[u8; 32]>)> + '_ {
        let mut hashes = self.hashes.chunks_exact(32);
        self.lines
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(move |line| (line, hashes.next().and_then(|h| h.try_into().ok())))
    }

    /// The events as stored, decoded, with their positions and hashes as the block states
    /// them (for listing and streaming; [`crate::chain::ChainCheck`] is what checks them).
    pub fn events(&self) -> Result<Vec<ChainedEvent>, DecodeError> {
        if let Some(why) = &self.unreadable {
            return Err(DecodeError(why.clone()));
        }
        let mut prev = self.prev_hash;
        self.entries()
            .map(|(line, hash)| {
                let (seq, event) = canonical::decode(line)?;
                let hash = hash.ok_or_else(|| DecodeError("a hash is missing".into()))?;
                let chained = ChainedEvent {
                    event,
                    seq,
                    prev_hash: prev,
                    hash,
                };
                prev = hash;
                Ok(chained)
            })
            .collect()
    }
}

/// Chains `events` (all of `head`'s chain, in order; at least one) after `head`, advancing it:
/// the block to store, and the events as stored.
pub fn seal(head: &mut ChainHead, events: &[AuditEvent]) -> (AuditBlock, Vec<ChainedEvent>) {
    let encoded = EncodedEvents::of(events);
    let refs: Vec<EncodedEvent<'_>> = encoded.iter().collect();
    let block = seal_encoded(head, &refs);
    let mut prev = block.prev_hash;
    let chained = events
        .iter()
        .zip(block.hashes.chunks_exact(32))
        .enumerate()
        .map(|(i, (event, hash))| {
            let hash: [u8; 32] = hash.try_into().unwrap_or_default();
            let chained = ChainedEvent {
                event: event.clone(),
                seq: block.first_seq + i as i64,
                prev_hash: prev,
                hash,
            };
            prev = hash;
            chained
        })
        .collect();
    (block, chained)
}

/// Most events one block holds.
pub const MAX_BLOCK_EVENTS: usize = 1024;
/// Most bytes of lines one block holds, unless a single event is larger: a block is read and
/// decompressed whole, so its size is bounded (and [`crate::codec`] refuses to decompress much
/// more).
pub const MAX_BLOCK_BYTES: usize = 4 * 1024 * 1024;

/// [`seal_encoded`] into as many blocks as [`MAX_BLOCK_EVENTS`] and [`MAX_BLOCK_BYTES`] need
/// (one, but for a backlog).
pub fn seal_blocks(head: &mut ChainHead, events: &[EncodedEvent<'_>]) -> Vec<AuditBlock> {
    let mut blocks = Vec::new();
    let mut start = 0;
    while start < events.len() {
        let (mut end, mut bytes) = (start, 0);
        while end < events.len()
            && end - start < MAX_BLOCK_EVENTS
            && (end == start || bytes + events[end].len() <= MAX_BLOCK_BYTES)
        {
            bytes += events[end].len();
            end += 1;
        }
        blocks.push(seal_encoded(head, &events[start..end]));
        start = end;
    }
    blocks
}

/// Chains `events`, encoded where they were made (all of `head`'s chain, in order; at least
/// one), after `head`, advancing it: the block to store. Per event this writes its position
/// into its encoding and hashes the line.
pub fn seal_encoded(head: &mut ChainHead, events: &[EncodedEvent<'_>]) -> AuditBlock {
    let prev_hash = head.last_hash;
    let first_seq = head.last_seq + 1;
    let bytes: usize = events.iter().map(EncodedEvent::len).sum();
    let mut lines = Vec::with_capacity(bytes + events.len() * 8);
    let mut hashes = Vec::with_capacity(events.len() * 32);
    let (mut earliest, mut latest) = (None::<OffsetDateTime>, None::<OffsetDateTime>);
    for event in events {
        let seq = head.last_seq + 1;
        let start = lines.len();
        event.write_line(seq, &mut lines);
        let hash = canonical::link_hash(&head.last_hash, &lines[start..]);
        lines.push(b'\n');
        hashes.extend_from_slice(&hash);
        let at = event.occurred_at;
        earliest = Some(earliest.map_or(at, |e| e.min(at)));
        latest = Some(latest.map_or(at, |l| l.max(at)));
        head.last_seq = seq;
        head.last_hash = hash;
        head.last_event_id = Some(event.id);
    }
    let now = tessera_domain::timestamp::now();
    AuditBlock {
        tenant_id: head.tenant_id,
        first_seq,
        last_seq: head.last_seq,
        earliest_at: earliest.unwrap_or(now),
        latest_at: latest.unwrap_or(now),
        prev_hash,
        hashes,
        lines,
        unreadable: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_events as events;

    #[test]
    fn a_backlog_is_sealed_into_bounded_blocks_that_chain() {
        let tenant = TenantId::new();
        let encoded = EncodedEvents::of(&events(MAX_BLOCK_EVENTS * 2 + 5, tenant));
        let refs: Vec<_> = encoded.iter().collect();
        let mut head = ChainHead::empty(Some(tenant));
        let blocks = seal_blocks(&mut head, &refs);
        assert_eq!(
            blocks
                .iter()
                .map(|b| (b.first_seq, b.last_seq))
                .collect::<Vec<_>>(),
            [(1, 1024), (1025, 2048), (2049, 2053)]
        );
        assert_eq!(blocks[1].prev_hash, blocks[0].last_hash());
        assert_eq!(head.last_hash, blocks[2].last_hash());
    }

    #[test]
    fn a_sealed_block_reads_back_as_the_events_it_holds() {
        let tenant = TenantId::new();
        let mut head = ChainHead::empty(Some(tenant));
        let (first, chained) = seal(&mut head, &events(3, tenant));
        assert_eq!((first.first_seq, first.last_seq), (1, 3));
        assert_eq!(first.events().expect("decode"), chained);
        assert_eq!(first.last_hash(), head.last_hash);
        let (second, more) = seal(&mut head, &events(2, tenant));
        assert_eq!((second.first_seq, second.last_seq), (4, 5));
        assert_eq!(second.prev_hash, first.last_hash());
        assert_eq!(more[0].prev_hash, chained[2].hash);
        assert!(!format!("{second:?}").contains("token.read"));
    }
}
