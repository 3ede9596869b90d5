//! [`WebhookStore`] for both backends: one row per webhook (settings, delivery cursor and
//! lease), and the published signing keys (docs/webhooks.md).
//!
//! The limit of webhooks per tenant holds under concurrent creates on every backend: each
//! webhook takes a free slot 1 to 5, and `UNIQUE (tenant_id, slot)` refuses a second writer
//! of the same slot. The lease is a conditional update, as for data-key jobs: one process at
//! a time delivers a webhook.

use async_trait::async_trait;
use diesel::{
    AsChangeset, BoolExpressionMethods, ExpressionMethods, OptionalExtension, QueryDsl, Queryable,
    Selectable, SelectableHelper,
};
use diesel_async::RunQueryDsl;
use tessera_domain::{
    store::{StoreError, StoredSigningKey, StoredWebhook, WebhookStore},
    webhook::{Webhook, WebhookCursor, WebhookSettings, WebhookStatus},
    Page, PageRequest, TenantId, WebhookId,
};
use time::{OffsetDateTime, PrimitiveDateTime};

use crate::{
    database::{page_of, window, with_conn, with_write_conn, Database, DbResultExt},
    rows::to_db_time,
    schema::{webhook_signing_keys, webhooks as hooks},
};

/// A webhook row as stored.
#[derive(Queryable, Selectable)]
#[diesel(table_name = hooks)]
struct WebhookRow {
    tenant_id: String,
    id: String,
    name: String,
    url: String,
    notify_email: Option<String>,
    events: String,
    status: String,
    created_by: String,
    created_at: PrimitiveDateTime,
    modified_by: Option<String>,
    modified_at: Option<PrimitiveDateTime>,
    cursor_seq: i64,
    cursor_hash: Vec<u8>,
    cursor_sub: i32,
    failing_since: Option<PrimitiveDateTime>,
    attempts: i32,
    next_attempt_at: Option<PrimitiveDateTime>,
    last_error: Option<String>,
    last_delivered_at: Option<PrimitiveDateTime>,
    disabled_at: Option<PrimitiveDateTime>,
    lease_until: Option<PrimitiveDateTime>,
}

impl TryFrom<WebhookRow> for StoredWebhook {
    type Error = StoreError;

    fn try_from(r: WebhookRow) -> Result<Self, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("webhook {}: invalid {what}", r.id));
        let names: Vec<String> = serde_json::from_str(&r.events).map_err(|_| corrupt("events"))?;
        let events = names
            .iter()
            .map(|n| n.parse().map_err(|_| corrupt("events")))
            .collect::<Result<_, _>>()?;
        let at = |t: Option<PrimitiveDateTime>| t.map(PrimitiveDateTime::assume_utc);
        Ok(StoredWebhook {
            webhook: Webhook {
                id: r.id.parse().map_err(|_| corrupt("id"))?,
                tenant_id: r.tenant_id.parse().map_err(|_| corrupt("tenant id"))?,
                settings: WebhookSettings {
                    name: r.name.clone(),
                    url: r.url.clone(),
                    notify_email: r.notify_email.clone(),
                    events,
                    status: None,
                },
                status: WebhookStatus::parse(&r.status).ok_or_else(|| corrupt("status"))?,
                created_by: r.created_by.parse().map_err(|_| corrupt("created_by"))?,
                created_at: r.created_at.assume_utc(),
                modified_by: r
                    .modified_by
                    .as_deref()
                    .map(str::parse)
                    .transpose()
                    .map_err(|_| corrupt("modified_by"))?,
                modified_at: at(r.modified_at),
            },
            cursor: WebhookCursor {
                seq: r.cursor_seq,
                hash: r
                    .cursor_hash
                    .as_slice()
                    .try_into()
                    .map_err(|_| corrupt("cursor hash"))?,
                sub: u32::try_from(r.cursor_sub).unwrap_or(0),
                failing_since: at(r.failing_since),
                attempts: u32::try_from(r.attempts).unwrap_or(0),
                next_attempt_at: at(r.next_attempt_at),
                last_error: r.last_error.clone(),
                last_delivered_at: at(r.last_delivered_at),
                disabled_at: at(r.disabled_at),
            },
            lease_until: at(r.lease_until),
        })
    }
}

fn events_json(webhook: &Webhook) -> String {
    let names: Vec<&str> = webhook.settings.events.iter().map(|e| e.as_str()).collect();
    serde_json::Value::from(names).to_string()
}

fn db_at(t: Option<OffsetDateTime>) -> Option<PrimitiveDateTime> {
    t.map(to_db_time)
}

/// The delivery columns a cursor save and a disabling both write.
#[derive(AsChangeset)]
#[diesel(table_name = hooks, treat_none_as_null = true)]
struct CursorChangeset {
    cursor_seq: i64,
    cursor_hash: Vec<u8>,
    cursor_sub: i32,
    failing_since: Option<PrimitiveDateTime>,
    attempts: i32,
    next_attempt_at: Option<PrimitiveDateTime>,
    last_error: Option<String>,
    last_delivered_at: Option<PrimitiveDateTime>,
    disabled_at: Option<PrimitiveDateTime>,
}

impl From<&WebhookCursor> for CursorChangeset {
    fn from(c: &WebhookCursor) -> Self {
        Self {
            cursor_seq: c.seq,
            cursor_hash: c.hash.to_vec(),
            cursor_sub: i32::try_from(c.sub).unwrap_or(i32::MAX),
            failing_since: db_at(c.failing_since),
            attempts: i32::try_from(c.attempts).unwrap_or(i32::MAX),
            next_attempt_at: db_at(c.next_attempt_at),
            last_error: c.last_error.clone(),
            last_delivered_at: db_at(c.last_delivered_at),
            disabled_at: db_at(c.disabled_at),
        }
    }
}

#[async_trait]
impl WebhookStore for Database {
    async fn insert_webhook(&self, stored: &StoredWebhook, max: u32) -> Result<bool, StoreError> {
        let w = &stored.webhook;
        let (tenant, id) = (w.tenant_id.to_string(), w.id.to_string());
        let events = events_json(w);
        let created_by = w.created_by.to_string();
        let created_at = to_db_time(w.created_at);
        let hash = stored.cursor.hash.as_slice();
        // A concurrent create may take the slot first: try the next free one again. Each
        // round fills a slot or finds them full, so `max` + 1 rounds always decide.
        for _ in 0..=max {
            let inserted = with_write_conn!(self, |conn| {
                let used: Vec<i32> = hooks::table
                    .filter(hooks::tenant_id.eq(&tenant))
                    .select(hooks::slot)
                    .load(conn)
                    .await
                    .db()?;
                let max = i32::try_from(max).unwrap_or(i32::MAX);
                match (1..=max).find(|s| !used.contains(s)) {
                    None => Ok::<_, StoreError>(Some(false)),
                    Some(slot) => {
                        let result = diesel::insert_into(hooks::table)
                            .values((
                                hooks::tenant_id.eq(&tenant),
                                hooks::id.eq(&id),
                                hooks::slot.eq(slot),
                                hooks::name.eq(&w.settings.name),
                                hooks::url.eq(&w.settings.url),
                                hooks::notify_email.eq(&w.settings.notify_email),
                                hooks::events.eq(&events),
                                hooks::status.eq(w.status.as_str()),
                                hooks::created_by.eq(&created_by),
                                hooks::created_at.eq(created_at),
                                hooks::cursor_seq.eq(stored.cursor.seq),
                                hooks::cursor_hash.eq(hash),
                                hooks::cursor_sub.eq(0),
                                hooks::attempts.eq(0),
                            ))
                            .execute(conn)
                            .await
                            .db();
                        match result {
                            Ok(_) => Ok(Some(true)),
                            Err(StoreError::Conflict(_)) => Ok(None),
                            Err(e) => Err(e),
                        }
                    }
                }
            })?;
            if let Some(done) = inserted {
                return Ok(done);
            }
        }
        Err(StoreError::Conflict(
            "webhooks of this tenant are being created concurrently".into(),
        ))
    }

    async fn get_webhook(
        &self,
        tenant: TenantId,
        id: WebhookId,
    ) -> Result<Option<StoredWebhook>, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let row = with_conn!(self, |conn| {
            hooks::table
                .filter(hooks::tenant_id.eq(&tenant))
                .filter(hooks::id.eq(&id))
                .select(WebhookRow::as_select())
                .first(conn)
                .await
                .optional()
                .db()
        })?;
        row.map(StoredWebhook::try_from).transpose()
    }

    async fn list_webhooks(
        &self,
        tenant: TenantId,
        page: PageRequest,
    ) -> Result<Page<StoredWebhook>, StoreError> {
        let tenant = tenant.to_string();
        let (limit, offset) = window(page);
        let (total, rows) = with_conn!(self, |conn| {
            let total: i64 = hooks::table
                .filter(hooks::tenant_id.eq(&tenant))
                .count()
                .get_result(conn)
                .await
                .db()?;
            let rows: Vec<WebhookRow> = hooks::table
                .filter(hooks::tenant_id.eq(&tenant))
                .order((hooks::created_at.asc(), hooks::id.asc()))
                .limit(limit)
                .offset(offset)
                .select(WebhookRow::as_select())
                .load(conn)
                .await
                .db()?;
            Ok::<_, StoreError>((total, rows))
        })?;
        page_of(rows, total, page, StoredWebhook::try_from)
    }

    async fn replace_webhook(&self, w: &Webhook, clear_failures: bool) -> Result<bool, StoreError> {
        let (tenant, id) = (w.tenant_id.to_string(), w.id.to_string());
        let events = events_json(w);
        let modified_by = w.modified_by.map(|m| m.to_string());
        let modified_at = db_at(w.modified_at);
        let settings = (
            hooks::name.eq(&w.settings.name),
            hooks::url.eq(&w.settings.url),
            hooks::notify_email.eq(&w.settings.notify_email),
            hooks::events.eq(&events),
            hooks::status.eq(w.status.as_str()),
            hooks::modified_by.eq(&modified_by),
            hooks::modified_at.eq(modified_at),
        );
        // One statement either way: a concurrent save never sees half of it.
        let updated = with_write_conn!(self, |conn| {
            let target = hooks::table
                .filter(hooks::tenant_id.eq(&tenant))
                .filter(hooks::id.eq(&id));
            if clear_failures {
                diesel::update(target)
                    .set((
                        settings,
                        (
                            hooks::failing_since.eq(None::<PrimitiveDateTime>),
                            hooks::attempts.eq(0),
                            hooks::next_attempt_at.eq(None::<PrimitiveDateTime>),
                            hooks::disabled_at.eq(None::<PrimitiveDateTime>),
                        ),
                    ))
                    .execute(conn)
                    .await
                    .db()
            } else {
                diesel::update(target)
                    .set(settings)
                    .execute(conn)
                    .await
                    .db()
            }
        })?;
        Ok(updated == 1)
    }

    async fn delete_webhook(&self, tenant: TenantId, id: WebhookId) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let n = with_write_conn!(self, |conn| {
            diesel::delete(
                hooks::table
                    .filter(hooks::tenant_id.eq(&tenant))
                    .filter(hooks::id.eq(&id)),
            )
            .execute(conn)
            .await
            .db()
        })?;
        Ok(n == 1)
    }

    async fn enabled_webhooks(&self) -> Result<Vec<StoredWebhook>, StoreError> {
        let rows: Vec<WebhookRow> = with_conn!(self, |conn| {
            hooks::table
                .filter(hooks::status.eq(WebhookStatus::Enabled.as_str()))
                .order((hooks::tenant_id.asc(), hooks::id.asc()))
                .select(WebhookRow::as_select())
                .load(conn)
                .await
                .db()
        })?;
        // One unreadable row must not stop every tenant's webhooks: it is skipped, and said.
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                StoredWebhook::try_from(row)
                    .map_err(|e| tracing::warn!(error = %e, "skipping an unreadable webhook row"))
                    .ok()
            })
            .collect())
    }

    async fn claim_webhook(
        &self,
        id: WebhookId,
        owner: &str,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let (id, now, until) = (id.to_string(), to_db_time(now), to_db_time(until));
        let n = with_write_conn!(self, |conn| {
            diesel::update(
                hooks::table
                    .filter(hooks::id.eq(&id))
                    .filter(hooks::status.eq(WebhookStatus::Enabled.as_str()))
                    .filter(
                        hooks::lease_owner
                            .is_null()
                            .or(hooks::lease_until.lt(now))
                            .or(hooks::lease_owner.eq(owner)),
                    ),
            )
            .set((hooks::lease_owner.eq(owner), hooks::lease_until.eq(until)))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(n == 1)
    }

    async fn save_webhook_cursor(
        &self,
        tenant: TenantId,
        id: WebhookId,
        c: &WebhookCursor,
        owner: &str,
        until: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let (tenant, id, until) = (tenant.to_string(), id.to_string(), to_db_time(until));
        let changes = CursorChangeset::from(c);
        let n = with_write_conn!(self, |conn| {
            diesel::update(
                hooks::table
                    .filter(hooks::tenant_id.eq(&tenant))
                    .filter(hooks::id.eq(&id))
                    .filter(hooks::status.eq(WebhookStatus::Enabled.as_str()))
                    .filter(hooks::lease_owner.eq(owner)),
            )
            .set((&changes, hooks::lease_until.eq(until)))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(n == 1)
    }

    async fn disable_webhook(
        &self,
        tenant: TenantId,
        id: WebhookId,
        c: &WebhookCursor,
        owner: &str,
    ) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let changes = CursorChangeset::from(c);
        let n = with_write_conn!(self, |conn| {
            diesel::update(
                hooks::table
                    .filter(hooks::tenant_id.eq(&tenant))
                    .filter(hooks::id.eq(&id))
                    .filter(hooks::status.eq(WebhookStatus::Enabled.as_str()))
                    .filter(hooks::lease_owner.eq(owner)),
            )
            .set((
                &changes,
                hooks::status.eq(WebhookStatus::Disabled.as_str()),
                hooks::lease_owner.eq(None::<String>),
                hooks::lease_until.eq(None::<PrimitiveDateTime>),
            ))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(n == 1)
    }

    async fn release_webhook(&self, id: WebhookId, owner: &str) -> Result<(), StoreError> {
        let id = id.to_string();
        with_write_conn!(self, |conn| {
            diesel::update(
                hooks::table
                    .filter(hooks::id.eq(&id))
                    .filter(hooks::lease_owner.eq(owner)),
            )
            .set((
                hooks::lease_owner.eq(None::<String>),
                hooks::lease_until.eq(None::<PrimitiveDateTime>),
            ))
            .execute(conn)
            .await
            .db()
        })?;
        Ok(())
    }

    async fn webhook_signing_keys(&self) -> Result<Vec<StoredSigningKey>, StoreError> {
        let rows: Vec<(i32, String, PrimitiveDateTime, PrimitiveDateTime)> =
            with_conn!(self, |conn| {
                webhook_signing_keys::table
                    .order(webhook_signing_keys::version.asc())
                    .select((
                        webhook_signing_keys::version,
                        webhook_signing_keys::public_pem,
                        webhook_signing_keys::created_at,
                        webhook_signing_keys::activates_at,
                    ))
                    .load(conn)
                    .await
                    .db()
            })?;
        rows.into_iter()
            .map(|(version, public_pem, created, activates)| {
                Ok(StoredSigningKey {
                    version: u32::try_from(version)
                        .map_err(|_| StoreError::Corrupt("signing key version".into()))?,
                    public_pem,
                    created_at: created.assume_utc(),
                    activates_at: activates.assume_utc(),
                })
            })
            .collect()
    }

    async fn insert_webhook_signing_key(&self, key: &StoredSigningKey) -> Result<bool, StoreError> {
        let version = i32::try_from(key.version)
            .map_err(|_| StoreError::Backend("signing key version out of range".into()))?;
        let (created, activates) = (to_db_time(key.created_at), to_db_time(key.activates_at));
        let n = with_write_conn!(self, |conn| {
            diesel::insert_into(webhook_signing_keys::table)
                .values((
                    webhook_signing_keys::version.eq(version),
                    webhook_signing_keys::public_pem.eq(&key.public_pem),
                    webhook_signing_keys::created_at.eq(created),
                    webhook_signing_keys::activates_at.eq(activates),
                ))
                .on_conflict_do_nothing()
                .execute(conn)
                .await
                .db()
        })?;
        Ok(n == 1)
    }
}
