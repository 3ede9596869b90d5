DROP TABLE idempotency_keys;
DROP INDEX tokens_unfingerprinted;
DROP INDEX tokens_fingerprint;
ALTER TABLE tokens DROP COLUMN fingerprint;
DROP INDEX tokens_expiry;
ALTER TABLE tokens DROP COLUMN expires_at;
