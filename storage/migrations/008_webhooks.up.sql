-- Threshold webhooks. webhook is the hooks: a counter name or a prefix
-- (is_prefix), thresholds as a JSON list, every (0: none), and the secret
-- the relay signs with. The secret is kept as it was shown, not as a hash:
-- an HMAC needs the key itself. failing_since is when the hook's current
-- run of failed attempts began (NULL after a success); the relay disables
-- a hook that has failed for days.
CREATE TABLE IF NOT EXISTS webhook (
  id            BIGINT        NOT NULL AUTO_INCREMENT,
  key_id        BIGINT        NOT NULL,
  url           VARCHAR(2048) NOT NULL,
  target        VARBINARY(255) NOT NULL,
  is_prefix     BOOLEAN       NOT NULL,
  thresholds    BLOB          NOT NULL,
  every         BIGINT        NOT NULL,
  direction     VARCHAR(8)    NOT NULL,
  secret        VARCHAR(128)  NOT NULL,
  created_at    DATETIME(6)   NOT NULL,
  disabled_at   DATETIME(6)   NULL,
  failing_since DATETIME(6)   NULL,
  PRIMARY KEY (id),
  KEY webhook_key (key_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The outbox: one row per crossing, written in the transaction of the
-- change that crossed, and the only state of its delivery. msg_id is the
-- webhook-id every attempt sends; body the bytes every attempt sends and
-- signs. status: 0 pending, 1 delivered, 2 failed. A pending row is due at
-- next_attempt_at; a claimed one carries the claim's token and is leased
-- until next_attempt_at; a delivered or failed one ended then (and is
-- purged 30 days later). The AUTO_INCREMENT id orders a hook's deliveries
-- (this table is never the counter upsert's, whose insert id it would
-- disturb: it is written by a later statement of the transaction).
CREATE TABLE IF NOT EXISTS webhook_event (
  id               BIGINT       NOT NULL AUTO_INCREMENT,
  hook_id          BIGINT       NOT NULL,
  msg_id           VARCHAR(40)  NOT NULL,
  body             BLOB         NOT NULL,
  status           TINYINT      NOT NULL,
  attempts         INT          NOT NULL,
  last_status_code SMALLINT     NULL,
  next_attempt_at  DATETIME(6)  NOT NULL,
  claim_token      BINARY(16)   NULL,
  created_at       DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  KEY webhook_event_due (status, next_attempt_at),
  KEY webhook_event_hook (hook_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
