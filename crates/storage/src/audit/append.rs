//! Appending events to their chains, one block per chain, in one transaction.
//!
//! The writer's [`Appender`] keeps its own connection and each chain's head as it last wrote
//! it. Appending to a chain whose head it knows is two statements: the head moved from the
//! known head to the new one *only if it is still the known head* (an `UPDATE … WHERE last_seq
//! = ? AND last_hash = ?`, which also takes the head's lock), then the block inserted. When the
//! head moved meanwhile (another process wrote the chain, retention pruned it) or is not
//! known, the chain is read under its lock and sealed after what it holds: the statements of
//! the first release (ensure, lock, read, insert, write). Heads are taken in chain-key order,
//! so two transactions spanning the same chains cannot deadlock.
//!
//! A chain whose block cannot be stored — a record already at its next position, planted or
//! left by a failure, which the insert's `ON CONFLICT DO NOTHING` reports as no row, or a
//! head that cannot be read — fails alone and is reported in its [`ChainAppend`]: its head is
//! left as it was (put back, if the fast path had moved it) while the other chains commit.
//! Nothing fails a statement on purpose; on PostgreSQL, where any failed statement aborts the
//! transaction (a head lock that timed out), each chain runs in a savepoint so that it fails
//! alone too. (SQLite holds one write lock for the whole database: a wait for it fails the
//! transaction before any chain.)
//!
//! A backlog is written as several blocks of bounded size ([`tessera_audit::seal_blocks`]). Events
//! retried after a commit whose outcome was unknown are not written twice: the head names the
//! last one written.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use diesel::{ExpressionMethods, QueryDsl};
use tessera_audit::{
    AuditAppender, AuditBlock, ChainAppend, ChainEvents, ChainHead, EncodedEvent, EncodedEvents,
};
use tessera_domain::{store::StoreError, TenantId};

use super::rows::{chain_key, head, BlockRow};
use crate::{
    database::{checkout, Database, DbResultExt, Dedicated, Pools, WriteTurn},
    schema::{audit_blocks, audit_chains},
};

/// Each chain's head as this appender last committed it, by chain key.
type Heads = HashMap<String, ChainHead>;

/// One chain's outcome and, when written, its new head (kept once the transaction commits).
type Outcome = Result<(Vec<AuditBlock>, ChainHead), StoreError>;

/// The audit writer's appender ([`tessera_audit::AuditStore::audit_appender`]).
pub(crate) struct Appender {
    conn: Dedicated,
    heads: Heads,
    /// On SQLite, the process's turn to write, which its other writers queue for too.
    turn: Option<WriteTurn>,
}

impl Appender {
    pub(crate) async fn open(db: &Database) -> Result<Self, StoreError> {
        Ok(Self {
            conn: db.dedicated().await?,
            heads: Heads::new(),
            turn: db.write_turn(),
        })
    }
}

#[async_trait]
impl AuditAppender for Appender {
    async fn append(&mut self, chains: &[ChainEvents<'_>]) -> Result<Vec<ChainAppend>, StoreError> {
        let keyed = keyed(chains);
        let outcomes = match &mut self.conn {
            Dedicated::Sqlite(conn) => {
                let _turn = match &self.turn {
                    Some(turn) => Some(turn.take().await),
                    None => None,
                };
                let heads = &self.heads;
                conn.immediate_transaction(|conn| sqlite::append_in(conn, heads, &keyed))
                    .db()?
            }
            Dedicated::Postgres(conn) => {
                postgres::append_in(conn, &self.heads, &keyed).await.db()?
            }
        };
        Ok(settle(&mut self.heads, outcomes))
    }
}

/// [`tessera_audit::AuditStore::append_audit_events`]: the same statements on a pooled
/// connection, knowing no head.
pub(super) async fn append(
    db: &Database,
    events: EncodedEvents,
) -> Result<Vec<ChainAppend>, StoreError> {
    let outcomes = match &db.pools {
        Pools::Sqlite { pool, writes, .. } => {
            let _turn = writes.take().await;
            let mut conn = checkout(pool).await?;
            conn.spawn_blocking(move |conn| {
                let chains = group(&events);
                let keyed = keyed(&chains);
                conn.immediate_transaction(|conn| sqlite::append_in(conn, &Heads::new(), &keyed))
            })
            .await
            .db()?
        }
        Pools::Postgres { pool, .. } => {
            let mut conn = checkout(pool).await?;
            let chains = group(&events);
            let keyed = keyed(&chains);
            postgres::append_in(&mut conn, &Heads::new(), &keyed)
                .await
                .db()?
        }
    };
    Ok(settle(&mut Heads::new(), outcomes))
}

/// `events` by chain, in order.
fn group(events: &EncodedEvents) -> Vec<ChainEvents<'_>> {
    let mut chains: BTreeMap<Option<TenantId>, ChainEvents<'_>> = BTreeMap::new();
    for e in events.iter() {
        chains
            .entry(e.chain)
            .or_insert_with(|| ChainEvents {
                chain: e.chain,
                events: Vec::new(),
            })
            .events
            .push(e);
    }
    chains.into_values().collect()
}

/// The chains with their keys, in key order (the order heads are locked in).
fn keyed<'c, 'a>(chains: &'c [ChainEvents<'a>]) -> Vec<(String, &'c ChainEvents<'a>)> {
    let mut keyed: Vec<_> = chains.iter().map(|c| (chain_key(c.chain), c)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed
}

/// After the commit: keeps the written chains' heads, forgets the failed ones'.
fn settle(
    heads: &mut Heads,
    outcomes: Vec<(String, Option<TenantId>, Outcome)>,
) -> Vec<ChainAppend> {
    outcomes
        .into_iter()
        .map(|(key, tenant_id, outcome)| ChainAppend {
            tenant_id,
            result: match outcome {
                Ok((block, head)) => {
                    heads.insert(key, head);
                    Ok(block)
                }
                Err(e) => {
                    heads.remove(&key);
                    Err(e)
                }
            },
        })
        .collect()
}

fn conflict(head: &ChainHead) -> StoreError {
    StoreError::Conflict(format!(
        "a record already holds position {} of this audit chain",
        head.last_seq + 1
    ))
}

/// How many of `events` come after the head's last event: after a commit whose outcome was not
/// known (the connection broke as it committed), the writer retries events that may already be
/// in the chain; the head names the last one written, and those up to it are not written again.
fn unwritten<'e, 'a>(head: &ChainHead, events: &'e [EncodedEvent<'a>]) -> &'e [EncodedEvent<'a>] {
    let written = head
        .last_event_id
        .and_then(|id| events.iter().position(|e| e.id == id))
        .map_or(0, |i| i + 1);
    &events[written..]
}

/// The conditional move of a chain's head from `old` to `new` (0 rows: it is not at `old`).
macro_rules! advance_head {
    ($key:expr, $old:expr, $new:expr) => {
        diesel::update(
            audit_chains::table
                .filter(audit_chains::tenant_id.eq($key))
                .filter(audit_chains::last_seq.eq($old.last_seq))
                .filter(audit_chains::last_hash.eq($old.last_hash.as_slice())),
        )
        .set((
            audit_chains::last_seq.eq($new.last_seq),
            audit_chains::last_hash.eq($new.last_hash.as_slice()),
            audit_chains::last_event_id.eq($new.last_event_id.map(|id| id.to_string())),
        ))
    };
}

/// The head put back where it was (the fast path moved it, then the block could not go in).
macro_rules! restore_head {
    ($key:expr, $old:expr) => {
        diesel::update(audit_chains::table.filter(audit_chains::tenant_id.eq($key))).set((
            audit_chains::last_seq.eq($old.last_seq),
            audit_chains::last_hash.eq($old.last_hash.as_slice()),
            audit_chains::last_event_id.eq($old.last_event_id.map(|id| id.to_string())),
        ))
    };
}

/// Inserts the blocks, unless a record already holds one's position: then the ones inserted
/// before it are deleted again, and `false`.
macro_rules! insert_blocks {
    ($conn:ident, $key:expr, $blocks:expr, $exec:ident) => {{
        let mut inserted = 0;
        for block in $blocks.iter() {
            let row = BlockRow::from(block);
            let query = diesel::insert_into(audit_blocks::table)
                .values(row)
                .on_conflict_do_nothing();
            if $exec!(query.execute($conn)) != 1 {
                break;
            }
            inserted += 1;
        }
        if inserted > 0 && inserted < $blocks.len() {
            let firsts: Vec<i64> = $blocks[..inserted].iter().map(|b| b.first_seq).collect();
            $exec!(diesel::delete(
                audit_blocks::table
                    .filter(audit_blocks::tenant_id.eq($key))
                    .filter(audit_blocks::first_seq.eq_any(firsts))
            )
            .execute($conn));
        }
        inserted == $blocks.len()
    }};
}

/// One chain's statements, for either backend: `$exec!(statement)` runs a statement and gives
/// the rows it changed (or the row it read), `?`-propagating database errors.
macro_rules! append_chain {
    ($conn:ident, $heads:expr, $key:expr, $chain:expr, $exec:ident) => {{
        let key: &str = $key;
        let events = &$chain.events;
        let mut outcome: Option<Outcome> = None;
        // Fast path: the head as this appender last wrote it.
        if let Some(known) = $heads.get(key) {
            let mut new = known.clone();
            let blocks = tessera_audit::seal_blocks(&mut new, events);
            if $exec!(advance_head!(key, known, new).execute($conn)) == 1 {
                if insert_blocks!($conn, key, blocks, $exec) {
                    outcome = Some(Ok((blocks, new)));
                } else {
                    // Put the head back: the chain fails alone.
                    $exec!(restore_head!(key, known).execute($conn));
                    outcome = Some(Err(conflict(known)));
                }
            }
        }
        match outcome {
            Some(outcome) => outcome,
            // The head as stored.
            None => {
                $exec!(ensure_head!(key).execute($conn));
                $exec!(lock_head!(key).execute($conn));
                match head($exec!(read_head!(key).get_result($conn))) {
                    Err(e) => Err(StoreError::Corrupt(e.to_string())),
                    Ok(stored) => {
                        let events = unwritten(&stored, events);
                        let mut new = stored.clone();
                        let blocks = tessera_audit::seal_blocks(&mut new, events);
                        if blocks.is_empty() {
                            Ok((blocks, new))
                        } else if insert_blocks!($conn, key, blocks, $exec) {
                            $exec!(write_head!(key, new).execute($conn));
                            Ok((blocks, new))
                        } else {
                            Err(conflict(&stored))
                        }
                    }
                }
            }
        }
    }};
}

mod sqlite {
    use diesel::{RunQueryDsl, SqliteConnection};

    use super::*;
    use crate::database::now;

    pub(super) fn append_in(
        conn: &mut SqliteConnection,
        heads: &Heads,
        chains: &[(String, &ChainEvents<'_>)],
    ) -> Result<Vec<(String, Option<TenantId>, Outcome)>, diesel::result::Error> {
        let mut out = Vec::with_capacity(chains.len());
        for (key, chain) in chains {
            let outcome = append_chain!(conn, heads, key, chain, now);
            out.push((key.clone(), chain.chain, outcome));
        }
        Ok(out)
    }
}

mod postgres {
    use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

    use super::*;
    use crate::database::later;

    pub(super) async fn append_in(
        conn: &mut AsyncPgConnection,
        heads: &Heads,
        chains: &[(String, &ChainEvents<'_>)],
    ) -> Result<Vec<(String, Option<TenantId>, Outcome)>, diesel::result::Error> {
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let mut out = Vec::with_capacity(chains.len());
            for (key, chain) in chains {
                // A savepoint per chain: a statement that fails (a head lock that times out)
                // aborts PostgreSQL's transaction, and must fail that chain alone.
                let outcome = conn
                    .transaction::<_, diesel::result::Error, _>(async |conn| {
                        Ok(append_chain!(conn, heads, key, chain, later))
                    })
                    .await
                    .db()
                    .and_then(|outcome| outcome);
                out.push((key.clone(), chain.chain, outcome));
            }
            Ok(out)
        })
        .await
    }
}
