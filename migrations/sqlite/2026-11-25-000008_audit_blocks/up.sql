-- Audit blocks (issue 24): each committed batch is stored as one row per chain, holding its
-- events' canonical encodings (the bytes that are hashed, one per line) and their hashes, each
-- event still chained to the one before. Per event the database does no row insert and no
-- index update any more, only its share of one row.
--
-- tenant_id is the chain key (the nil UUID for the deployment's chain). earliest_at and
-- latest_at bound the times of the block's events, so a time-filtered listing skips blocks
-- without reading them. Verification walks every row of a chain, also those outside the
-- range its head vouches for (attack finding 3).
CREATE TABLE audit_blocks (
    tenant_id   TEXT NOT NULL,
    first_seq   BIGINT NOT NULL,
    last_seq    BIGINT NOT NULL,
    earliest_at TIMESTAMP NOT NULL,
    latest_at   TIMESTAMP NOT NULL,
    prev_hash   BLOB NOT NULL,
    hashes      BLOB NOT NULL,
    events      BLOB NOT NULL,
    PRIMARY KEY (tenant_id, first_seq)
);

-- The rows of audit_events (one per event, migration 000006) are moved into blocks by the
-- first process that starts on this release (Database::move_legacy_audit_events), chain by
-- chain under the chain's head lock; the table then stays empty.
