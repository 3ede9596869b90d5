-- CVC retention (docs/operations.md, "CVC retention"): a card's CVC is kept for a while after
-- the token's creation, then the sweep seals its data again without it. `holds_cvc` marks the
-- rows whose sealed data may still hold one: every card stored before this release (its data
-- was never looked at), and each card written since with a CVC. The sweep clears the mark.
ALTER TABLE tokens ADD COLUMN holds_cvc BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE tokens SET holds_cvc = TRUE WHERE token_type = 'card';
CREATE INDEX tokens_holding_cvc ON tokens (created_at) WHERE holds_cvc;
