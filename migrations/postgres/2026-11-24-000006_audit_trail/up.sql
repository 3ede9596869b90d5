-- Audit trail (issue 16): one row per event, chained per tenant by SHA-256.

-- tenant_id is the nil UUID for the deployment's own chain: refusals that name no tenant
-- (an unknown API key, an unknown proxy key). No foreign key: the trail outlives what it
-- names, and only retention removes events.
--
-- One b-tree per event and no secondary index, on purpose: every proxied request writes an
-- event, and each index insert is paid on that path (profiled: index and page writes were
-- most of the audit writer's time). Listing walks the primary key newest first; the
-- resource_id and time filters scan within the tenant's chain.
CREATE TABLE audit_events (
    tenant_id    TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    event_id     TEXT NOT NULL,
    occurred_at  TIMESTAMP NOT NULL,
    action       TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    actor        TEXT NOT NULL,
    -- JSON array of ids.
    resource_ids TEXT NOT NULL,
    proxy_id     TEXT,
    request_id   TEXT,
    reason       TEXT,
    prev_hash    BYTEA NOT NULL,
    hash         BYTEA NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);

-- Each chain's head: its last event, and the anchor retention left (the last removed event).
-- Appending locks this row first, so writers in several processes never fork a chain.
CREATE TABLE audit_chains (
    tenant_id     TEXT PRIMARY KEY,
    last_seq      BIGINT NOT NULL,
    last_hash     BYTEA NOT NULL,
    last_event_id TEXT,
    pruned_seq    BIGINT NOT NULL,
    pruned_hash   BYTEA NOT NULL
);

-- Bootstrap admins created before audit:read existed hold every other permission: give them
-- this one too, as new admins get it (JSON arrays written by Tessera, so appending is safe).
UPDATE applications
SET permissions = substr(permissions, 1, length(permissions) - 1) || ',"audit:read"]'
WHERE app_type = 'management'
  AND name = 'admin'
  AND permissions LIKE '%"token:use"%'
  AND permissions LIKE '%"application:delete"%'
  AND permissions NOT LIKE '%"audit:read"%';
