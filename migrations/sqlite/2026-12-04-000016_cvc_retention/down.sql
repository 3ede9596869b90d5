DROP INDEX tokens_holding_cvc;
ALTER TABLE tokens DROP COLUMN holds_cvc;
