-- One row per Idempotency-Key: the first answer to the request that used it,
-- written in the transaction of that request's change, so that a retry after
-- a timeout or a crash finds either both or neither. The key is binary
-- (case-sensitive). The row is inserted first in that transaction: a
-- concurrent request with the same key waits on it, then reads the answer.
-- Rows live until expires_at; a periodic purge deletes them in chunks along
-- the expires_at index, and reads treat an expired row as absent.
CREATE TABLE IF NOT EXISTS idempotency_key (
  idem_key    VARBINARY(255) NOT NULL,
  fingerprint BINARY(32)     NOT NULL,
  status      SMALLINT       NOT NULL,
  body        MEDIUMBLOB     NOT NULL,
  created_at  DATETIME(6)    NOT NULL,
  expires_at  DATETIME(6)    NOT NULL,
  PRIMARY KEY (idem_key),
  KEY idempotency_key_expires (expires_at)
) ENGINE=InnoDB;
