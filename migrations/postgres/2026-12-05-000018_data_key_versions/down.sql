DROP TABLE data_key_jobs;
ALTER TABLE tenants DROP COLUMN wrapped_index_keys;
DROP TABLE tenant_data_keys;
