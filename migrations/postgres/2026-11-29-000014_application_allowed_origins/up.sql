-- A public application's browser origins (docs/api.md, "Allowed origins"): a JSON array of
-- exact origins, empty for every other application.
ALTER TABLE applications ADD COLUMN allowed_origins TEXT NOT NULL DEFAULT '[]';
