-- Search indexes and fingerprint expressions (docs/api.md, "Search indexes").
--
-- A token keeps the templates its create named (NULL: its type's defaults, never stored per
-- token); the values they render are kept only as keyed hashes under the tenant's search key,
-- one row each. A row names its token's container, so a search's container scope is applied
-- inside the index. Rows are written in the token's transaction and deleted with it by the
-- code that deletes tokens (as metadata rows are), and by the key on the tenant.
ALTER TABLE tokens ADD COLUMN search_indexes TEXT;
ALTER TABLE tokens ADD COLUMN fingerprint_expression TEXT;

CREATE TABLE token_search_index (
    tenant_id TEXT NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    hash      BYTEA NOT NULL,
    container TEXT NOT NULL,
    token_id  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, hash, container, token_id)
);
CREATE INDEX token_search_index_token ON token_search_index (tenant_id, token_id);
