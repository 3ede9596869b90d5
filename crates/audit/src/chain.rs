//! The hash chain that makes a tenant's trail tamper-evident.
//!
//! Each event's hash is `SHA-256("tessera-audit-v1\n" ‖ prev_hash ‖ canonical(event))` (see
//! [`crate::canonical`]). The first event's `prev_hash` is all zeros, or — once retention has
//! removed older events — the hash of the last removed one, which the chain's head keeps and
//! an `audit.pruned` event in the chain repeats. Altering an event changes its hash; deleting
//! one breaks the next event's link or the head; re-hashing everything after an edit still
//! disagrees with the head unless that is forged too, which is why operators should copy the
//! heads `api audit verify` prints somewhere the database's writers cannot reach. A removal
//! of the oldest events is either recorded in the chain (and so changes the head) or caught.

use uuid::Uuid;

use crate::{block::AuditBlock, canonical, head::ChainHead};
use tessera_domain::audit::{AuditAction, BrokenLink, Pruned};

/// Re-walks one chain: feed it every stored block of the chain in `first_seq` order (all of
/// them: also those outside the range the head vouches for), then [`ChainCheck::finish`].
#[derive(Debug)]
pub struct ChainCheck {
    head: ChainHead,
    next_seq: i64,
    prev_hash: [u8; 32],
    checked: u64,
    /// The last `audit.pruned` event seen.
    last_pruning: Option<Pruned>,
}

impl ChainCheck {
    /// Starts at what retention left: the event after `head.pruned_seq`.
    pub fn new(head: ChainHead) -> Self {
        Self {
            next_seq: head.pruned_seq + 1,
            prev_hash: head.pruned_hash,
            head,
            checked: 0,
            last_pruning: None,
        }
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

    /// The id of the first event a block claims to hold, when it can be read.
    fn first_id(block: &AuditBlock) -> Option<Uuid> {
        let (line, _) = block.entries().next()?;
        canonical::read_id(line)
    }

    /// Checks the next stored block.
    pub fn check_block(&mut self, block: &AuditBlock) -> Result<(), BrokenLink> {
        let (first, last) = (block.first_seq, block.last_seq);
        if first <= self.head.pruned_seq {
            return Err(self.broken(
                first,
                Self::first_id(block),
                format!(
                    "a record of positions {first} to {last} lies at or before what retention removed (position {}): planted, or left by a removal that was not recorded",
                    self.head.pruned_seq
                ),
            ));
        }
        if first > self.head.last_seq {
            return Err(self.broken(
                first,
                Self::first_id(block),
                format!(
                    "a record of positions {first} to {last} lies after the chain's head (position {}): planted, or left by a write that failed; its events are not part of the chain",
                    self.head.last_seq
                ),
            ));
        }
        if first != self.next_seq {
            let problem = if first > self.next_seq {
                format!(
                    "events {} to {} are missing before this one",
                    self.next_seq,
                    first - 1
                )
            } else {
                format!("out of order: expected position {}", self.next_seq)
            };
            return Err(self.broken(first, Self::first_id(block), problem));
        }
        if block.prev_hash != self.prev_hash {
            return Err(self.broken(
                first,
                Self::first_id(block),
                "its prev_hash is not the previous event's hash (the previous event was altered or replaced)".into(),
            ));
        }
        if let Some(why) = &block.unreadable {
            return Err(self.broken(
                first,
                None,
                format!("the record of positions {first} to {last} cannot be read: {why}"),
            ));
        }
        for (line, stored) in block.entries() {
            self.check_event(line, stored)?;
        }
        if last != self.next_seq - 1 {
            return Err(self.broken(
                first,
                Self::first_id(block),
                format!(
                    "the record says it holds positions {first} to {last} but holds {} to {}",
                    first,
                    self.next_seq - 1
                ),
            ));
        }
        Ok(())
    }

    fn check_event(&mut self, line: &[u8], stored: Option<[u8; 32]>) -> Result<(), BrokenLink> {
        let seq = self.next_seq;
        let (at, event) = canonical::decode(line).map_err(|e| {
            let id = canonical::read_id(line);
            self.broken(seq, id, format!("the event cannot be read: {e}"))
        })?;
        let id = Some(event.id);
        if at != seq {
            return Err(self.broken(
                seq,
                id,
                format!("the event says it is at position {at}, not {seq} (moved or reordered)"),
            ));
        }
        let hash = canonical::link_hash(&self.prev_hash, line);
        if stored != Some(hash) {
            return Err(self.broken(
                seq,
                id,
                "its contents do not match its hash (the event was altered)".into(),
            ));
        }
        if event.action == AuditAction::AuditPruned {
            self.last_pruning = event.pruned;
        }
        self.next_seq += 1;
        self.prev_hash = hash;
        self.checked += 1;
        Ok(())
    }

    /// Checks that the walk reached the head (no event after the last one seen was removed)
    /// and that what retention removed is recorded in the chain.
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
        let anchor = Pruned {
            through_seq: self.head.pruned_seq,
            last_hash: self.head.pruned_hash,
        };
        if self.head.pruned_seq != 0 && self.last_pruning != Some(anchor) {
            return Err(self.broken(
                self.head.pruned_seq + 1,
                None,
                format!(
                    "events up to position {} were removed, but no audit.pruned event in the chain records that removal",
                    self.head.pruned_seq
                ),
            ));
        }
        Ok(self.checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{block::seal, test_events as events};
    use tessera_domain::{
        audit::{Actor, AuditEvent},
        ApplicationId, TenantId,
    };

    fn walk(head: &ChainHead, blocks: &[AuditBlock]) -> Result<u64, BrokenLink> {
        let mut check = ChainCheck::new(head.clone());
        for b in blocks {
            check.check_block(b)?;
        }
        check.finish()
    }

    /// Three blocks of 2, 3 and 1 events.
    fn chain(tenant: TenantId) -> (ChainHead, Vec<AuditBlock>) {
        let mut head = ChainHead::empty(Some(tenant));
        let blocks = [2, 3, 1]
            .iter()
            .map(|n| seal(&mut head, &events(*n, tenant)).0)
            .collect();
        (head, blocks)
    }

    fn id_at(blocks: &[AuditBlock], seq: i64) -> Uuid {
        blocks
            .iter()
            .flat_map(|b| b.events().expect("decode"))
            .find(|e| e.seq == seq)
            .expect("event")
            .event
            .id
    }

    #[test]
    fn an_intact_chain_verifies() {
        let (head, blocks) = chain(TenantId::new());
        assert_eq!(walk(&head, &blocks), Ok(6));
    }

    #[test]
    fn an_edit_inside_a_block_names_the_event() {
        let (head, blocks) = chain(TenantId::new());
        let mut edited = blocks.clone();
        let text = String::from_utf8(edited[1].lines.clone()).expect("utf-8");
        let target = id_at(&blocks, 4).to_string();
        edited[1].lines = text.replace(&target, &target.to_uppercase()).into_bytes();
        let broken = walk(&head, &edited).expect_err("edit");
        assert_eq!(broken.seq, 4, "{broken:?}");
        // Re-hashing the edited event's stored hash moves the break to the next event.
        let mut rehashed = blocks.clone();
        let line = {
            let mut lines = rehashed[1].lines.split(|b| *b == b'\n');
            lines.next();
            lines.next().expect("line").to_vec()
        };
        let forged = String::from_utf8(line.clone())
            .expect("utf-8")
            .replace("token.read", "token.created");
        let prev: [u8; 32] = rehashed[1].hashes[0..32].try_into().expect("hash");
        let rehash = canonical::link_hash(&prev, forged.as_bytes());
        let text = String::from_utf8(rehashed[1].lines.clone())
            .expect("utf-8")
            .replace(&String::from_utf8(line).expect("utf-8"), &forged);
        rehashed[1].lines = text.into_bytes();
        rehashed[1].hashes[32..64].copy_from_slice(&rehash);
        let broken = walk(&head, &rehashed).expect_err("re-hashed edit");
        assert_eq!((broken.seq, broken.event_id), (5, Some(id_at(&blocks, 5))));
    }

    /// A line that no longer decodes (its actor recased) is still named by its id, and so is
    /// one whose id itself is recased.
    #[test]
    fn an_event_that_cannot_be_read_is_named_by_its_id() {
        let tenant = TenantId::new();
        let mut head = ChainHead::empty(Some(tenant));
        let actors: Vec<ApplicationId> = (0..3).map(|_| ApplicationId::new()).collect();
        let events: Vec<AuditEvent> = actors
            .iter()
            .map(|app| {
                AuditEvent::success(
                    tenant,
                    AuditAction::TokenRead,
                    Actor::Application(*app),
                    vec![Uuid::new_v4().into()],
                )
            })
            .collect();
        let block = seal(&mut head, &events).0;
        let recase = |from: &str| {
            let mut edited = block.clone();
            let text = String::from_utf8(edited.lines.clone()).expect("utf-8");
            edited.lines = text.replace(from, &from.to_uppercase()).into_bytes();
            walk(&head, &[edited]).expect_err("recased")
        };
        let broken = recase(&actors[1].to_string());
        assert!(
            broken.problem.contains("cannot be read"),
            "{}",
            broken.problem
        );
        assert_eq!((broken.seq, broken.event_id), (2, Some(events[1].id)));
        let broken = recase(&events[0].id.to_string());
        assert_eq!((broken.seq, broken.event_id), (1, Some(events[0].id)));
        assert_eq!(canonical::read_id(b"{\"id\":\"+f\"}"), None);
        assert_eq!(canonical::read_id(b"not json"), None);
    }

    #[test]
    fn deletions_reorders_and_cut_ends_are_named() {
        let (head, blocks) = chain(TenantId::new());
        let deleted = [blocks[0].clone(), blocks[2].clone()];
        let broken = walk(&head, &deleted).expect_err("deletion");
        assert_eq!((broken.seq, broken.event_id), (6, Some(id_at(&blocks, 6))));
        assert!(broken.problem.contains("3 to 5"), "{}", broken.problem);
        let cut = walk(&head, &blocks[..2]).expect_err("cut");
        assert_eq!(cut.seq, 6);
        let mut swapped = blocks.clone();
        let (a, b) = (swapped[1].lines.clone(), swapped[1].hashes.clone());
        let mut lines: Vec<&[u8]> = a.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
        lines.swap(0, 1);
        swapped[1].lines = lines.join(&b'\n');
        swapped[1].lines.push(b'\n');
        let mut hashes = b.clone();
        hashes[..32].copy_from_slice(&b[32..64]);
        hashes[32..64].copy_from_slice(&b[..32]);
        swapped[1].hashes = hashes;
        assert_eq!(walk(&head, &swapped).expect_err("reorder").seq, 3);
    }

    /// Records outside the head's range are walked and reported.
    #[test]
    fn records_outside_the_heads_range_are_reported() {
        let tenant = TenantId::new();
        let (head, mut blocks) = chain(tenant);
        let mut ahead = head.clone();
        let planted = seal(&mut ahead, &events(1, tenant)).0;
        blocks.push(planted);
        let broken = walk(&head, &blocks).expect_err("planted");
        assert_eq!(broken.seq, 7);
        assert!(
            broken.problem.contains("after the chain's head"),
            "{}",
            broken.problem
        );
        let mut negative = ChainHead::empty(Some(tenant));
        negative.last_seq = -3;
        let mut early = seal(&mut negative, &events(1, tenant)).0;
        early.first_seq = -2;
        let (head, blocks) = chain(tenant);
        let mut with_early = vec![early];
        with_early.extend(blocks);
        assert!(walk(&head, &with_early).is_err());
    }

    /// A deleted prefix with a forged anchor is caught unless an
    /// `audit.pruned` event records exactly that removal.
    #[test]
    fn a_removal_must_be_recorded_in_the_chain() {
        let tenant = TenantId::new();
        let (mut head, blocks) = chain(tenant);
        let mut forged = head.clone();
        forged.pruned_seq = 2;
        forged.pruned_hash = blocks[0].last_hash();
        let broken = walk(&forged, &blocks[1..]).expect_err("unrecorded removal");
        assert!(
            broken.problem.contains("audit.pruned"),
            "{}",
            broken.problem
        );
        let pruning = AuditEvent::pruning(Some(tenant), 2, blocks[0].last_hash(), 2);
        let (record, _) = seal(&mut head, &[pruning]);
        head.pruned_seq = 2;
        head.pruned_hash = blocks[0].last_hash();
        let mut kept = blocks[1..].to_vec();
        kept.push(record);
        assert_eq!(walk(&head, &kept), Ok(5));
    }
}
