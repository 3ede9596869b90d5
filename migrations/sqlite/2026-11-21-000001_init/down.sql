DROP TABLE token_metadata;
DROP TABLE tokens;
DROP TABLE applications;
DROP TABLE tenants;
