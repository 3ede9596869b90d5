-- A search's metadata pairs after the first are probed per candidate token by (tenant, token,
-- key) (attack finding 7). The primary key has those columns but not the value, so the
-- planner preferred the index-only pair index (tenant, key, value, created_at, token_id), in
-- which token_id is not a boundary column: every probe scanned the whole pair. Covering the
-- value here makes the probe one index-only lookup, whatever the statistics say.
CREATE INDEX token_metadata_lookup ON token_metadata (tenant_id, token_id, key) INCLUDE (value);

-- Idempotent requests are now kept as an HMAC under a per-tenant key (attack finding 4): the
-- plain SHA-256 kept until now let a database copy alone recover a card number from a body.
-- Those hashes are deleted, with their stored answers (sealed in a format this release no
-- longer reads). A retry of a request made before the upgrade runs again instead of being
-- replayed; keys live at most 24 hours.
DELETE FROM idempotency_keys;
