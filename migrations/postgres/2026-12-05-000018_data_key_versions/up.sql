-- Data-key versions (docs/operations.md, "Rotating data keys"). A tenant's first data key stays
-- in tenants.wrapped_data_key (what 0.1.0 reads); each later version is a row here, wrapped by
-- the key-encrypting key. Rows name the version that sealed them in their ciphertext's header.
CREATE TABLE tenant_data_keys (
    tenant_id   TEXT NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    version     INTEGER NOT NULL CHECK (version >= 2),
    wrapped_key BYTEA NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, version)
);
-- The tenant's index keys (fingerprints, search indexes, idempotent requests), wrapped, from
-- its first rotation on; NULL: derived from its first data key, as before.
ALTER TABLE tenants ADD COLUMN wrapped_index_keys BYTEA;
-- One re-encryption job per tenant: where it is, and which process holds it until when.
CREATE TABLE data_key_jobs (
    tenant_id      TEXT PRIMARY KEY REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    target_version INTEGER NOT NULL,
    stage          TEXT NOT NULL,
    cursor         TEXT NOT NULL,
    rows_done      BIGINT NOT NULL,
    started_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL,
    finished_at    TIMESTAMP,
    lease_owner    TEXT,
    lease_until    TIMESTAMP
);
