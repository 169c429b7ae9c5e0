-- Rate and silence alerts are webhooks too (webhooks.Alert): a hook with
-- alert_window (seconds; NULL for a threshold hook) calls when the sum of
-- its counter's counted steps over the window starts or stops being at or
-- above alert_n (alert_above) or under it. alert_since is when the hook
-- started watching, and alert_baseline the steps history held in that
-- quarter hour by then, which are not the hook's.
--
-- The alert's state is here, beside the hook, so that the process that
-- finds a transition moves it and records its event in the outbox
-- (webhook_event) in one transaction, and only from the state it read:
-- alert_seq counts the transitions recorded, and the move is an UPDATE
-- ... WHERE alert_seq = <the one read>. Of several processes evaluating
-- at once, or one evaluating again after a restart or a failed commit,
-- exactly one records each transition. alert_at is when the check that
-- recorded the last one ran: a move found by an earlier check (a process
-- whose clock is behind) is refused, so that clocks a little apart do not
-- undo each other's transitions.
--
-- Safe to run again (see 010): the ALTER runs only when the columns are
-- missing, all of them in one.
SET @webhook_alert := IF(
  (SELECT COUNT(*) FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'webhook' AND COLUMN_NAME = 'alert_window') > 0,
  'DO 0',
  'ALTER TABLE webhook
     ADD COLUMN alert_window   INT         NULL,
     ADD COLUMN alert_above    BOOLEAN     NOT NULL DEFAULT FALSE,
     ADD COLUMN alert_n        BIGINT      NOT NULL DEFAULT 0,
     ADD COLUMN alert_since    DATETIME(6) NULL,
     ADD COLUMN alert_baseline BIGINT      NOT NULL DEFAULT 0,
     ADD COLUMN alert_holds    BOOLEAN     NOT NULL DEFAULT FALSE,
     ADD COLUMN alert_seq      BIGINT      NOT NULL DEFAULT 0,
     ADD COLUMN alert_at       DATETIME(6) NULL');
PREPARE webhook_alert FROM @webhook_alert;
EXECUTE webhook_alert;
DEALLOCATE PREPARE webhook_alert;
