-- Token lifecycle (issue 15): expiry, fingerprints, idempotent creates.

-- NULL: never expires. Expired rows are invisible at once and deleted by the sweep, which
-- finds them through this partial index (across tenants: the sweep is deployment-wide).
ALTER TABLE tokens ADD COLUMN expires_at TIMESTAMP;
CREATE INDEX tokens_expiry ON tokens (expires_at) WHERE expires_at IS NOT NULL;

-- HMAC-SHA-256 of the token's data under the tenant's fingerprint key, hex. '' marks a row
-- written before this migration; start-up computes those (Vault::backfill_fingerprints).
ALTER TABLE tokens ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
-- Ends in (created_at, id) so that a search by fingerprint, newest first, reads its page in
-- index order (without it SQLite's planner walks tokens_page instead and filters 100k rows).
CREATE INDEX tokens_fingerprint ON tokens (tenant_id, fingerprint, created_at, id);
CREATE INDEX tokens_unfingerprinted ON tokens (tenant_id, id) WHERE fingerprint = '';

-- The token's created_at copied into its metadata pairs (immutable, like the copy in
-- token_associations), so a search by one pair, newest first, reads its page in the order of
-- one index instead of sorting or walking every token of the tenant.
ALTER TABLE token_metadata ADD COLUMN created_at TIMESTAMP;
UPDATE token_metadata SET created_at = (SELECT t.created_at FROM tokens t
    WHERE t.tenant_id = token_metadata.tenant_id AND t.id = token_metadata.token_id);
CREATE INDEX token_metadata_pair_newest
    ON token_metadata (tenant_id, key, value, created_at, token_id);

-- The answer to the first request made with an Idempotency-Key, per application, replayed
-- to retries for 24 hours. response_sealed is NULL while that first request runs; once set
-- it is sealed with the tenant's data key (create responses may hold a new API or proxy key).
CREATE TABLE idempotency_keys (
    tenant_id       TEXT NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    application_id  TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash    BLOB NOT NULL,
    response_sealed BLOB,
    created_at      TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, application_id, idempotency_key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);
