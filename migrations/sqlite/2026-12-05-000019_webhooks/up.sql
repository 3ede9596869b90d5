-- Webhooks (docs/webhooks.md). Each row holds the webhook's settings and where its delivery
-- stands: the last position of its tenant's audit chain it delivered (or passed over) and that
-- event's hash, and how many of the webhook events the next audit event stands for were sent (a
-- bulk call's), its run of failures, and which process delivers it until when (the lease).
-- A tenant holds at most 5: each takes one of the slots 1 to 5.
CREATE TABLE webhooks (
    tenant_id         TEXT NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    id                TEXT NOT NULL,
    slot              INTEGER NOT NULL CHECK (slot BETWEEN 1 AND 5),
    name              TEXT NOT NULL,
    url               TEXT NOT NULL,
    notify_email      TEXT,
    events            TEXT NOT NULL,
    status            TEXT NOT NULL,
    created_by        TEXT NOT NULL,
    created_at        TIMESTAMP NOT NULL,
    modified_by       TEXT,
    modified_at       TIMESTAMP,
    cursor_seq        BIGINT NOT NULL,
    cursor_hash       BLOB NOT NULL,
    cursor_sub        INTEGER NOT NULL,
    failing_since     TIMESTAMP,
    attempts          INTEGER NOT NULL,
    next_attempt_at   TIMESTAMP,
    last_error        TEXT,
    last_delivered_at TIMESTAMP,
    disabled_at       TIMESTAMP,
    lease_owner       TEXT,
    lease_until       TIMESTAMP,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, slot)
);
CREATE UNIQUE INDEX webhooks_by_id ON webhooks (id);
-- The deployment's webhook signing keys, published: the private halves are vault keys
-- (webhook-signing/<version>), wrapped by the key custody.
CREATE TABLE webhook_signing_keys (
    version      INTEGER PRIMARY KEY,
    public_pem   TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    activates_at TIMESTAMP NOT NULL
);
