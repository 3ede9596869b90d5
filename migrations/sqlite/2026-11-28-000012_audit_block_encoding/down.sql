-- Compressed blocks cannot be read without their encoding: refuse to go back while any exist
-- (the CHECK fails on a non-zero count).
CREATE TEMP TABLE compressed_audit_blocks (n INTEGER CHECK (n = 0));
INSERT INTO compressed_audit_blocks SELECT count(*) FROM audit_blocks WHERE encoding <> 0;
DROP TABLE compressed_audit_blocks;
ALTER TABLE audit_blocks DROP COLUMN encoding;
