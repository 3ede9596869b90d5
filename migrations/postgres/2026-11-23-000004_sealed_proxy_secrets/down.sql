-- Irreversible for proxies written or sealed after the up migration: their clear key and code
-- exist only sealed. Those rows are deleted so that the old schema's NOT NULL holds.
DELETE FROM proxies p WHERE NOT EXISTS
    (SELECT 1 FROM proxies_unsealed u WHERE u.tenant_id = p.tenant_id AND u.id = p.id);
DROP INDEX proxies_key_lookup;
ALTER TABLE proxies
    DROP COLUMN key_lookup,
    DROP COLUMN key_sealed,
    DROP COLUMN request_transform_sealed,
    DROP COLUMN response_transform_sealed,
    ADD COLUMN proxy_key TEXT,
    ADD COLUMN request_transform TEXT,
    ADD COLUMN response_transform TEXT;
UPDATE proxies p SET proxy_key = u.proxy_key, request_transform = u.request_transform,
    response_transform = u.response_transform
    FROM proxies_unsealed u WHERE u.tenant_id = p.tenant_id AND u.id = p.id;
ALTER TABLE proxies ALTER COLUMN proxy_key SET NOT NULL;
CREATE UNIQUE INDEX proxies_key ON proxies (proxy_key);
DROP TABLE proxies_unsealed;
DROP TABLE vault_keys;
