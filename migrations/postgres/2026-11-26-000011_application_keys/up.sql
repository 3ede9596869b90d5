-- Several keys per application (docs/api.md, "Application keys"). Each key is stored only as
-- its SHA-256, unique across tenants: a presented key is found by its hash before the tenant
-- is known, like the single key it replaces. Deleting an application deletes its keys.
CREATE TABLE application_keys (
    tenant_id      TEXT NOT NULL,
    application_id TEXT NOT NULL,
    id             TEXT NOT NULL,
    key_hash       BYTEA NOT NULL,
    created_by     TEXT NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, application_id) REFERENCES applications (tenant_id, id)
        ON DELETE CASCADE
);
CREATE UNIQUE INDEX application_keys_key_hash ON application_keys (key_hash);
CREATE INDEX application_keys_of_application
    ON application_keys (tenant_id, application_id, created_at, id);

-- Each application's key moves over and keeps working. Its id is a fresh UUID v4; it was
-- issued at the application's last change or before, so that change is its creation.
INSERT INTO application_keys (tenant_id, application_id, id, key_hash, created_by, created_at)
SELECT tenant_id, id, gen_random_uuid()::text, key_hash, modified_by, modified_at
FROM applications;

DROP INDEX applications_key_hash;
ALTER TABLE applications DROP COLUMN key_hash;

-- After this instant every key of the application is refused (NULL: never).
ALTER TABLE applications ADD COLUMN expires_at TIMESTAMP;
