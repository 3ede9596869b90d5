DROP TABLE webhook_signing_keys;
DROP TABLE webhooks;
