-- Irreversible for proxies written or sealed after the up migration: their clear key and code
-- exist only sealed. Those rows are deleted so that the old columns can be filled.
DELETE FROM proxies WHERE NOT EXISTS
    (SELECT 1 FROM proxies_unsealed u WHERE u.tenant_id = proxies.tenant_id AND u.id = proxies.id);
DROP INDEX proxies_key_lookup;
ALTER TABLE proxies DROP COLUMN key_lookup;
ALTER TABLE proxies DROP COLUMN key_sealed;
ALTER TABLE proxies DROP COLUMN request_transform_sealed;
ALTER TABLE proxies DROP COLUMN response_transform_sealed;
ALTER TABLE proxies ADD COLUMN proxy_key TEXT;
ALTER TABLE proxies ADD COLUMN request_transform TEXT;
ALTER TABLE proxies ADD COLUMN response_transform TEXT;
UPDATE proxies SET
    proxy_key = (SELECT u.proxy_key FROM proxies_unsealed u WHERE u.tenant_id = proxies.tenant_id AND u.id = proxies.id),
    request_transform = (SELECT u.request_transform FROM proxies_unsealed u WHERE u.tenant_id = proxies.tenant_id AND u.id = proxies.id),
    response_transform = (SELECT u.response_transform FROM proxies_unsealed u WHERE u.tenant_id = proxies.tenant_id AND u.id = proxies.id);
CREATE UNIQUE INDEX proxies_key ON proxies (proxy_key);
DROP TABLE proxies_unsealed;
DROP TABLE vault_keys;
