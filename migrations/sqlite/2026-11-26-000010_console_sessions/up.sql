-- Web-console sessions, shared by every api replica. Keyed by the SHA-256 of the session id
-- (the id itself is never stored); key_hash is the hash of the application's key that opened
-- the session, so the session ends when that key changes; key_sealed is that key sealed with
-- the tenant's data key (for the console's "Try it"): no usable credential without the
-- master key.
CREATE TABLE console_sessions (
    id_hash        BLOB PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    application_id TEXT NOT NULL,
    key_hash       BLOB NOT NULL,
    key_sealed     BLOB NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    last_seen_at   TIMESTAMP NOT NULL
);
CREATE INDEX console_sessions_last_seen ON console_sessions (last_seen_at);
CREATE INDEX console_sessions_created ON console_sessions (created_at);
