-- Compressed blocks cannot be read without their encoding: refuse to go back while any exist.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM audit_blocks WHERE encoding <> 0) THEN
        RAISE EXCEPTION 'audit_blocks holds compressed blocks; they cannot be read without the encoding column';
    END IF;
END $$;
ALTER TABLE audit_blocks DROP COLUMN encoding;
