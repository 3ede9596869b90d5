-- Back to one key per application: the oldest key stays; an application without keys gets a
-- random hash that no key has.
ALTER TABLE applications DROP COLUMN expires_at;
ALTER TABLE applications ADD COLUMN key_hash BLOB;
UPDATE applications SET key_hash = coalesce(
    (SELECT k.key_hash FROM application_keys k
     WHERE k.tenant_id = applications.tenant_id AND k.application_id = applications.id
     ORDER BY k.created_at, k.id LIMIT 1),
    randomblob(32));
CREATE UNIQUE INDEX applications_key_hash ON applications (key_hash);
DROP TABLE application_keys;
