//! [`AuditStore`] for both backends: the rows (here), appending ([`append`]), listing,
//! walking and pruning.

mod append;

use async_trait::async_trait;
use diesel::{
    ExpressionMethods, Insertable, OptionalExtension, QueryDsl, Queryable, Selectable,
    SelectableHelper, TextExpressionMethods,
};
use diesel_async::{AsyncConnection, RunQueryDsl};
use tessera_domain::{
    audit::{Actor, AuditAction, AuditEvent, AuditFilter, ChainHead, ChainedEvent, Outcome},
    store::{AuditStore, StoreError},
    Page, PageRequest, ProxyId, TenantId,
};
use time::{OffsetDateTime, PrimitiveDateTime};
use uuid::Uuid;

use crate::{
    database::{page_of, window, with_conn, Database, DbResultExt},
    rows::to_db_time,
    scan::with_scan_conn,
    schema::{audit_chains, audit_events},
};

/// The chain key of refusals that name no tenant.
const NO_TENANT: &str = "00000000-0000-0000-0000-000000000000";

fn chain_key(tenant: Option<TenantId>) -> String {
    tenant.map_or_else(|| NO_TENANT.to_string(), |t| t.to_string())
}

fn chain_tenant(key: &str) -> Result<Option<TenantId>, StoreError> {
    if key == NO_TENANT {
        return Ok(None);
    }
    key.parse()
        .map(Some)
        .map_err(|_| StoreError::Corrupt(format!("invalid audit tenant `{key}`")))
}

fn hash32(what: &str, raw: &[u8]) -> Result<[u8; 32], StoreError> {
    raw.try_into()
        .map_err(|_| StoreError::Corrupt(format!("audit {what} is not 32 bytes")))
}

fn uuid(what: &str, raw: &str) -> Result<Uuid, StoreError> {
    raw.parse()
        .map_err(|_| StoreError::Corrupt(format!("invalid audit {what} `{raw}`")))
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = audit_events)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
// `None` is bound as NULL, not DEFAULT: SQLite then takes many rows in one INSERT.
#[diesel(treat_none_as_default_value = false)]
struct EventRow {
    tenant_id: String,
    seq: i64,
    event_id: String,
    occurred_at: PrimitiveDateTime,
    action: String,
    outcome: String,
    actor: String,
    resource_ids: String,
    proxy_id: Option<String>,
    request_id: Option<String>,
    reason: Option<String>,
    prev_hash: Vec<u8>,
    hash: Vec<u8>,
}

impl From<&ChainedEvent> for EventRow {
    fn from(c: &ChainedEvent) -> Self {
        let e = &c.event;
        let ids: Vec<String> = e.resource_ids.iter().map(Uuid::to_string).collect();
        Self {
            tenant_id: chain_key(e.tenant_id),
            seq: c.seq,
            event_id: e.id.to_string(),
            occurred_at: to_db_time(e.occurred_at),
            action: e.action.as_str().to_string(),
            outcome: e.outcome.as_str().to_string(),
            actor: e.actor.to_wire(),
            // A list of UUID strings always serialises.
            resource_ids: serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into()),
            proxy_id: e.proxy_id.map(|p| p.to_string()),
            request_id: e.request_id.clone(),
            reason: e.reason.clone(),
            prev_hash: c.prev_hash.to_vec(),
            hash: c.hash.to_vec(),
        }
    }
}

impl TryFrom<EventRow> for ChainedEvent {
    type Error = StoreError;

    fn try_from(r: EventRow) -> Result<Self, StoreError> {
        let ids: Vec<String> = serde_json::from_str(&r.resource_ids)
            .map_err(|e| StoreError::Corrupt(format!("invalid audit resource ids: {e}")))?;
        Ok(ChainedEvent {
            event: AuditEvent {
                id: uuid("event id", &r.event_id)?,
                tenant_id: chain_tenant(&r.tenant_id)?,
                occurred_at: r.occurred_at.assume_utc(),
                action: r
                    .action
                    .parse::<AuditAction>()
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                outcome: Outcome::parse(&r.outcome).ok_or_else(|| {
                    StoreError::Corrupt(format!("invalid audit outcome `{}`", r.outcome))
                })?,
                actor: Actor::parse(&r.actor).ok_or_else(|| {
                    StoreError::Corrupt(format!("invalid audit actor `{}`", r.actor))
                })?,
                resource_ids: ids
                    .iter()
                    .map(|id| uuid("resource id", id))
                    .collect::<Result<_, _>>()?,
                proxy_id: r
                    .proxy_id
                    .as_deref()
                    .map(|p| uuid("proxy id", p).map(ProxyId::from_uuid))
                    .transpose()?,
                request_id: r.request_id,
                reason: r.reason,
            },
            seq: r.seq,
            prev_hash: hash32("prev_hash", &r.prev_hash)?,
            hash: hash32("hash", &r.hash)?,
        })
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = audit_chains)]
#[diesel(check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
struct HeadRow {
    tenant_id: String,
    last_seq: i64,
    last_hash: Vec<u8>,
    last_event_id: Option<String>,
    pruned_seq: i64,
    pruned_hash: Vec<u8>,
}

impl TryFrom<HeadRow> for ChainHead {
    type Error = StoreError;

    fn try_from(r: HeadRow) -> Result<Self, StoreError> {
        Ok(ChainHead {
            tenant_id: chain_tenant(&r.tenant_id)?,
            last_seq: r.last_seq,
            last_hash: hash32("head hash", &r.last_hash)?,
            last_event_id: r
                .last_event_id
                .as_deref()
                .map(|id| uuid("head event id", id))
                .transpose()?,
            pruned_seq: r.pruned_seq,
            pruned_hash: hash32("pruned hash", &r.pruned_hash)?,
        })
    }
}

/// The filter as column values.
struct FilterParams {
    tenant: String,
    actions: Vec<&'static str>,
    resource: Option<String>,
    actor: Option<String>,
    outcome: Option<&'static str>,
    from: Option<PrimitiveDateTime>,
    to: Option<PrimitiveDateTime>,
}

impl FilterParams {
    fn new(tenant: TenantId, f: &AuditFilter) -> Self {
        Self {
            tenant: tenant.to_string(),
            actions: f.actions.iter().map(|a| a.as_str()).collect(),
            // `resource_ids` is a JSON array of lowercase UUIDs, which hold no LIKE wildcard.
            resource: f.resource_id.map(|r| format!("%\"{r}\"%")),
            actor: f.actor.map(Actor::to_wire),
            outcome: f.outcome.map(Outcome::as_str),
            from: f.from.map(to_db_time),
            to: f.to.map(to_db_time),
        }
    }
}

/// The boxed `audit_events` query of a listing, for whichever backend `$conn` is.
macro_rules! filtered_events {
    ($p:expr) => {{
        let p: &FilterParams = $p;
        let mut q = audit_events::table
            .filter(audit_events::tenant_id.eq(&p.tenant))
            .into_boxed();
        if !p.actions.is_empty() {
            q = q.filter(audit_events::action.eq_any(&p.actions));
        }
        if let Some(pattern) = &p.resource {
            q = q.filter(audit_events::resource_ids.like(pattern));
        }
        if let Some(actor) = &p.actor {
            q = q.filter(audit_events::actor.eq(actor));
        }
        if let Some(outcome) = p.outcome {
            q = q.filter(audit_events::outcome.eq(outcome));
        }
        if let Some(from) = p.from {
            q = q.filter(audit_events::occurred_at.ge(from));
        }
        if let Some(to) = p.to {
            q = q.filter(audit_events::occurred_at.lt(to));
        }
        q
    }};
}

#[async_trait]
impl AuditStore for Database {
    async fn append_audit_events(
        &self,
        events: &[AuditEvent],
    ) -> Result<Vec<ChainedEvent>, StoreError> {
        append::append(self, events).await
    }

    async fn list_audit_events(
        &self,
        tenant: TenantId,
        filter: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<ChainedEvent>, StoreError> {
        let params = FilterParams::new(tenant, filter);
        let (limit, offset) = window(page);
        let (total, rows) = with_scan_conn!(self, |conn| {
            let total: i64 = filtered_events!(&params)
                .count()
                .get_result(conn)
                .await
                .db()?;
            let rows: Vec<EventRow> = filtered_events!(&params)
                .order(audit_events::seq.desc())
                .limit(limit)
                .offset(offset)
                .select(EventRow::as_select())
                .load(conn)
                .await
                .db()?;
            Ok::<_, StoreError>((total, rows))
        })?;
        page_of(rows, total, page, ChainedEvent::try_from)
    }

    async fn audit_chain_heads(&self) -> Result<Vec<ChainHead>, StoreError> {
        let rows: Vec<HeadRow> = with_conn!(self, |conn| {
            audit_chains::table
                .order(audit_chains::tenant_id)
                .select(HeadRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(ChainHead::try_from).collect()
    }

    async fn audit_chain_page(
        &self,
        tenant: Option<TenantId>,
        after: i64,
        up_to: i64,
        limit: u32,
    ) -> Result<Vec<ChainedEvent>, StoreError> {
        let key = chain_key(tenant);
        let rows: Vec<EventRow> = with_conn!(self, |conn| {
            audit_events::table
                .filter(audit_events::tenant_id.eq(&key))
                .filter(audit_events::seq.gt(after))
                .filter(audit_events::seq.le(up_to))
                .order(audit_events::seq)
                .limit(i64::from(limit))
                .select(EventRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        rows.into_iter().map(ChainedEvent::try_from).collect()
    }

    async fn prune_audit_events(&self, before: OffsetDateTime) -> Result<u64, StoreError> {
        let before = to_db_time(before);
        let mut removed = 0;
        for head in self.audit_chain_heads().await? {
            let key = chain_key(head.tenant_id);
            loop {
                let (pruned, more) = self.prune_chain_prefix(&key, before).await?;
                removed += pruned;
                if !more {
                    break;
                }
            }
        }
        Ok(removed)
    }
}

/// Events examined per pruning step.
const PRUNE_STEP: i64 = 1000;

impl Database {
    /// Removes the leading run of chain `key`'s events older than `before` (at most
    /// [`PRUNE_STEP`]), recording the last removed event in the head so verification starts
    /// after it. Walks the primary key from the oldest event left, so a chain with nothing to
    /// prune costs one probe. Returns what was removed and whether there may be more.
    async fn prune_chain_prefix(
        &self,
        key: &str,
        before: PrimitiveDateTime,
    ) -> Result<(u64, bool), StoreError> {
        let oldest: Vec<(i64, PrimitiveDateTime)> = with_conn!(self, |conn| {
            audit_events::table
                .filter(audit_events::tenant_id.eq(key))
                .order(audit_events::seq)
                .limit(PRUNE_STEP)
                .select((audit_events::seq, audit_events::occurred_at))
                .load(conn)
                .await
                .db()
        })?;
        let stale = oldest.iter().take_while(|(_, at)| *at < before).count();
        let Some(&(through, _)) = stale.checked_sub(1).and_then(|i| oldest.get(i)) else {
            return Ok((0, false));
        };
        let more = stale as i64 == PRUNE_STEP;
        let removed = with_conn!(self, |conn| {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                diesel::update(audit_chains::table.filter(audit_chains::tenant_id.eq(key)))
                    .set(audit_chains::last_seq.eq(audit_chains::last_seq))
                    .execute(conn)
                    .await?;
                let hash: Option<Vec<u8>> = audit_events::table
                    .filter(audit_events::tenant_id.eq(key))
                    .filter(audit_events::seq.eq(through))
                    .select(audit_events::hash)
                    .get_result(conn)
                    .await
                    .optional()?;
                // Another process pruned past it meanwhile: nothing left to do here.
                let Some(hash) = hash else {
                    return Ok(0);
                };
                let deleted = diesel::delete(
                    audit_events::table
                        .filter(audit_events::tenant_id.eq(key))
                        .filter(audit_events::seq.le(through)),
                )
                .execute(conn)
                .await?;
                diesel::update(audit_chains::table.filter(audit_chains::tenant_id.eq(key)))
                    .set((
                        audit_chains::pruned_seq.eq(through),
                        audit_chains::pruned_hash.eq(hash),
                    ))
                    .execute(conn)
                    .await?;
                Ok(deleted as u64)
            })
            .await
            .db()
        })?;
        Ok((removed, more && removed > 0))
    }
}
