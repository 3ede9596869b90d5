-- Nothing changes on SQLite. PostgreSQL's metadata rows now reference their tenant rather than
-- their token (see the PostgreSQL migration of the same name): SQLite checks a foreign key
-- through the parent's key index always, so its check never scans, and the key stays.
SELECT 1;
