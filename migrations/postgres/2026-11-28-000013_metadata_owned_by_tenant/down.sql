-- Back to metadata rows referencing their token (rows whose token is gone are removed first).
DELETE FROM token_metadata m
    WHERE NOT EXISTS (SELECT 1 FROM tokens t WHERE t.tenant_id = m.tenant_id AND t.id = m.token_id);
ALTER TABLE token_metadata DROP CONSTRAINT token_metadata_tenant_id_fkey;
ALTER TABLE token_metadata
    ADD CONSTRAINT token_metadata_tenant_id_token_id_fkey FOREIGN KEY (tenant_id, token_id)
    REFERENCES tokens (tenant_id, id) ON DELETE CASCADE;
