-- Destination binding (issue 27): the hosts a token's data may be sent to, as a JSON array of
-- lower-cased patterns; NULL: unbound. Not secret (kept in clear, listed by reads), but bound
-- into the token's ciphertext (its additional data), so a binding widened directly in the
-- database no longer opens the data.
ALTER TABLE tokens ADD COLUMN destinations TEXT;
