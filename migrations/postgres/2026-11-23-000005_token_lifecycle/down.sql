DROP TABLE idempotency_keys;
DROP INDEX token_metadata_pair_newest;
ALTER TABLE token_metadata DROP COLUMN created_at;
DROP INDEX tokens_unfingerprinted;
DROP INDEX tokens_fingerprint;
ALTER TABLE tokens DROP COLUMN fingerprint;
DROP INDEX tokens_expiry;
ALTER TABLE tokens DROP COLUMN expires_at;
