ALTER TABLE tokens DROP COLUMN destinations;
