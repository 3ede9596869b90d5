-- Pre-configured proxies. The invocation key is globally unique (an invocation finds its
-- proxy by key alone, before the tenant is known): like applications.key_hash, the one kind of
-- index not led by tenant_id. The configuration (third-party credentials) is stored encrypted
-- with the tenant's data key. A proxy's application cannot be deleted from under it.
CREATE TABLE proxies (
    tenant_id          TEXT NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    id                 TEXT NOT NULL,
    name               TEXT NOT NULL,
    name_search        TEXT NOT NULL,
    proxy_key          TEXT NOT NULL,
    destination_url    TEXT NOT NULL,
    request_transform  TEXT,
    response_transform TEXT,
    application_id     TEXT,
    configuration      BLOB,
    require_auth       BOOLEAN NOT NULL,
    created_by         TEXT NOT NULL,
    created_at         TIMESTAMP NOT NULL,
    modified_by        TEXT NOT NULL,
    modified_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, application_id) REFERENCES applications (tenant_id, id)
);
CREATE UNIQUE INDEX proxies_key ON proxies (proxy_key);
CREATE INDEX proxies_page ON proxies (tenant_id, created_at, id);
CREATE INDEX proxies_application ON proxies (tenant_id, application_id);
