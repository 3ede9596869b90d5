-- Back to one key per application: the oldest key stays; an application without keys gets a
-- hash that no key has.
ALTER TABLE applications DROP COLUMN expires_at;
ALTER TABLE applications ADD COLUMN key_hash BYTEA;
UPDATE applications SET key_hash = coalesce(
    (SELECT k.key_hash FROM application_keys k
     WHERE k.tenant_id = applications.tenant_id AND k.application_id = applications.id
     ORDER BY k.created_at, k.id LIMIT 1),
    sha256(convert_to('revoked:' || tenant_id || ':' || id, 'UTF8')));
ALTER TABLE applications ALTER COLUMN key_hash SET NOT NULL;
CREATE UNIQUE INDEX applications_key_hash ON applications (key_hash);
DROP TABLE application_keys;
