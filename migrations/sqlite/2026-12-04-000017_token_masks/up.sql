-- A token's own mask (docs/api.md, "Masks"): what the `mask` transform shows, sealed like the
-- token's data under the tenant's data key and bound to the token. NULL: the type's mask.
ALTER TABLE tokens ADD COLUMN mask_ciphertext BLOB;
