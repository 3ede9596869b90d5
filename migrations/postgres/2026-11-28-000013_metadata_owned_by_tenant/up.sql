-- Metadata rows reference their tenant, not their token.
--
-- PostgreSQL checks a foreign key with a plan each connection makes once and keeps. Made while
-- `tokens` was young (before its first ANALYZE), the check of a metadata row's token chose an
-- index that starts with `tenant_id` only (tokens_fingerprint, tokens_container), and then read
-- every token of the tenant for each metadata row it checked: a bulk import on a new database
-- slowed down with every token already stored, until autovacuum's ANALYZE replanned it. The
-- tenant's key is the only index of `tenants`, so this check cannot go wrong that way.
--
-- What the old key guaranteed is kept by the code that writes and deletes tokens: a token's
-- metadata rows are written in the token's transaction and deleted with it (delete, update,
-- the expiry sweep); a tenant's go with the tenant, by this key.
ALTER TABLE token_metadata DROP CONSTRAINT token_metadata_tenant_id_token_id_fkey;
ALTER TABLE token_metadata
    ADD CONSTRAINT token_metadata_tenant_id_fkey FOREIGN KEY (tenant_id)
    REFERENCES tenants (tenant_id) ON DELETE CASCADE;
