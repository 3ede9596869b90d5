DROP TABLE audit_blocks;
