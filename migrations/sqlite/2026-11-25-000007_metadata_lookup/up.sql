-- PostgreSQL gets a covering index for metadata probes here (see its migration). SQLite's
-- planner already probes the primary key (tenant_id, token_id, key) for them; nothing to do.
SELECT 1;
