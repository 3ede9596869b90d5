ALTER TABLE tokens DROP COLUMN mask_ciphertext;
