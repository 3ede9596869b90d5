-- PostgreSQL gets a covering index for metadata probes here (see its migration). SQLite's
-- planner already probes the primary key (tenant_id, token_id, key) for them; nothing to do.


-- Idempotent requests are now kept as an HMAC under a per-tenant key (attack finding 4): the
-- plain SHA-256 kept until now let a database copy alone recover a card number from a body.
-- Those hashes are deleted, with their stored answers (sealed in a format this release no
-- longer reads). A retry of a request made before the upgrade runs again instead of being
-- replayed; keys live at most 24 hours.
DELETE FROM idempotency_keys;
