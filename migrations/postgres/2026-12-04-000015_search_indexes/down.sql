DROP TABLE token_search_index;
ALTER TABLE tokens DROP COLUMN fingerprint_expression;
ALTER TABLE tokens DROP COLUMN search_indexes;
