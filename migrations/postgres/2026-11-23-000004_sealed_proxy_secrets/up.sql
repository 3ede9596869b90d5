-- Proxy secrets sealed at rest (issue 11): the invocation key is found through a keyed lookup
-- hash (HMAC-SHA-256 under a deployment-wide lookup key that the master key wraps) and kept
-- sealed with the tenant's data key, as is transform code. A copy of the database alone can
-- neither invoke a proxy nor read its code.
--
-- SQL cannot encrypt: the clear key and code of rows written before this migration move to
-- proxies_unsealed, which the first process that starts with the master key drains
-- (Vault::seal_legacy_proxies: seal into proxies, delete the clear row, then VACUUM FULL so
-- that no dead tuple keeps them). Rows written after never have a clear copy.

-- Deployment-wide keys, wrapped by the master key (re-wrapped by a master-key rotation).
CREATE TABLE vault_keys (
    name        TEXT NOT NULL PRIMARY KEY,
    wrapped_key BYTEA NOT NULL
);

CREATE TABLE proxies_unsealed (
    tenant_id          TEXT NOT NULL,
    id                 TEXT NOT NULL,
    proxy_key          TEXT NOT NULL,
    request_transform  TEXT,
    response_transform TEXT,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, id) REFERENCES proxies (tenant_id, id) ON DELETE CASCADE
);
INSERT INTO proxies_unsealed (tenant_id, id, proxy_key, request_transform, response_transform)
    SELECT tenant_id, id, proxy_key, request_transform, response_transform FROM proxies;

DROP INDEX proxies_key;
ALTER TABLE proxies
    DROP COLUMN proxy_key,
    DROP COLUMN request_transform,
    DROP COLUMN response_transform,
    ADD COLUMN key_lookup                BYTEA,
    ADD COLUMN key_sealed                BYTEA,
    ADD COLUMN request_transform_sealed  BYTEA,
    ADD COLUMN response_transform_sealed BYTEA;
CREATE UNIQUE INDEX proxies_key_lookup ON proxies (key_lookup);
