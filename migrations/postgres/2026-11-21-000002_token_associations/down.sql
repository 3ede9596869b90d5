DROP TABLE token_associations;
