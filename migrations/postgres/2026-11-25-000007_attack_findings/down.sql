DROP INDEX token_metadata_lookup;
