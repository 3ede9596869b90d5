-- Every table leads its primary key and indexes with tenant_id, and every query filters on it:
-- tenants stay apart, and a deployment can later shard by tenant. The one exception is the
-- credential lookup (applications.key_hash), made before the tenant is known.

CREATE TABLE tenants (
    tenant_id        TEXT NOT NULL PRIMARY KEY,
    name             TEXT NOT NULL,
    wrapped_data_key BLOB NOT NULL,
    created_at       TIMESTAMP NOT NULL
);

CREATE TABLE applications (
    tenant_id   TEXT NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    id          TEXT NOT NULL,
    name        TEXT NOT NULL,
    app_type    TEXT NOT NULL,
    permissions TEXT NOT NULL,
    rules       TEXT NOT NULL,
    key_hash    BLOB NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    modified_by TEXT NOT NULL,
    modified_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX applications_key_hash ON applications (key_hash);
CREATE INDEX applications_page ON applications (tenant_id, created_at, id);

CREATE TABLE tokens (
    tenant_id       TEXT NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    id              TEXT NOT NULL,
    token_type      TEXT NOT NULL,
    container       TEXT NOT NULL,
    metadata        TEXT NOT NULL,
    data_ciphertext BLOB NOT NULL,
    created_by      TEXT NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    modified_by     TEXT NOT NULL,
    modified_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX tokens_page ON tokens (tenant_id, created_at, id);
CREATE INDEX tokens_container ON tokens (tenant_id, container);

-- One row per metadata pair, so `metadata.<key>=<value>` filters use an index on both backends.
CREATE TABLE token_metadata (
    tenant_id TEXT NOT NULL,
    token_id  TEXT NOT NULL,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (tenant_id, token_id, key),
    FOREIGN KEY (tenant_id, token_id) REFERENCES tokens (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX token_metadata_pair ON token_metadata (tenant_id, key, value, token_id);
