-- An Idempotency-Key's record is now the domain's result of the first
-- request (JSON: a value, a counter, a list of values), no longer the HTTP
-- answer it was rendered as: storage keeps no HTTP, and the HTTP layer
-- renders a replay the way it rendered the original. Keys recorded in the
-- old form are dropped with their table; a retry of one of those runs anew.
-- Otherwise as idempotency_key in 002: the row is inserted first in the
-- change's transaction, a concurrent request with the same key waits on it,
-- and rows live until expires_at.
CREATE TABLE IF NOT EXISTS idempotency_record (
  idem_key    VARBINARY(255) NOT NULL,
  fingerprint BINARY(32)     NOT NULL,
  result      MEDIUMBLOB     NOT NULL,
  created_at  DATETIME(6)    NOT NULL,
  expires_at  DATETIME(6)    NOT NULL,
  PRIMARY KEY (idem_key),
  KEY idempotency_record_expires (expires_at)
) ENGINE=InnoDB;

DROP TABLE IF EXISTS idempotency_key;
