-- How a block's lines are stored: 0 as they are (every block written before this release),
-- 1 as one zstd frame primed with the dictionary of crates/domain/src/audit/codec.rs. The
-- hashes are over the lines as read back, whatever the encoding, so verification and listing
-- see the same bytes as before.
ALTER TABLE audit_blocks ADD COLUMN encoding SMALLINT NOT NULL DEFAULT 0;
