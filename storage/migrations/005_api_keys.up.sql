-- API keys: one row per key an app was given. Only the SHA-256 of the
-- secret is kept (see keys/secret.go for why a fast hash is right here):
-- a copy of this table opens nothing. A revoked key keeps its row, with
-- revoked_at set, so that a request with it is told "revoked", not
-- "unknown", and the metrics can say which. scopes, prefixes and companies
-- are JSON lists, read and written whole by the service.
CREATE TABLE IF NOT EXISTS api_key (
  id           BIGINT       NOT NULL AUTO_INCREMENT,
  name         VARCHAR(255) NOT NULL,
  secret_hash  BINARY(32)   NOT NULL,
  scopes       BLOB         NOT NULL,
  prefixes     MEDIUMBLOB   NOT NULL,
  companies    BLOB         NOT NULL,
  created_at   DATETIME(6)  NOT NULL,
  expires_at   DATETIME(6)  NULL,
  revoked_at   DATETIME(6)  NULL,
  last_used_at DATETIME(6)  NULL,
  PRIMARY KEY (id),
  UNIQUE KEY api_key_secret (secret_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Idempotency keys belong to the API key that sent them: the same
-- Idempotency-Key from two API keys names two requests, and one key's
-- recorded answer is never replayed to another. key_id 0 is the admin
-- token, which is who sent every row recorded before API keys existed.
-- One ALTER, so that it applies whole or not at all (MySQL 8 has no
-- ADD COLUMN IF NOT EXISTS).
ALTER TABLE idempotency_record
  ADD COLUMN key_id BIGINT NOT NULL DEFAULT 0 FIRST,
  DROP PRIMARY KEY,
  ADD PRIMARY KEY (key_id, idem_key);
