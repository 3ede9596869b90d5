ALTER TABLE applications DROP COLUMN allowed_origins;
