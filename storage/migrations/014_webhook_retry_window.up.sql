-- A delivery's retry window. A receiver's Retry-After (429, 503) used to
-- take one of the schedule's eight attempts each time: a receiver that
-- rate-limited with `Retry-After: 3` used them all up in 21 seconds and
-- the event was failed for good. Now a Retry-After only says when the next
-- attempt comes, and a delivery is failed once its window is spent:
-- retry_until is the window's end, set by the first claim (NULL before it,
-- and again when a claim was undone because the hook was disabled).
-- backoffs counts the schedule's pauses the delivery has taken (attempts
-- counts every call, Retry-After's included, as the deliveries' JSON
-- shows it), so that a plain failure after a run of 429s takes the
-- schedule's next pause, not its last.
--
-- Deliveries pending at the upgrade keep their attempts, start the
-- schedule's pauses from the first and get a window from their next claim:
-- at most a day more of retries for the events in flight, none lost.
--
-- Safe to run again (see 010): MySQL 8 has no ADD COLUMN IF NOT EXISTS, so
-- the ALTER runs only when the column is missing, both columns in one.
SET @webhook_retry_window := IF(
  (SELECT COUNT(*) FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'webhook_event' AND COLUMN_NAME = 'retry_until') > 0,
  'DO 0',
  'ALTER TABLE webhook_event
     ADD COLUMN backoffs    INT         NOT NULL DEFAULT 0 AFTER attempts,
     ADD COLUMN retry_until DATETIME(6) NULL AFTER next_attempt_at');
PREPARE webhook_retry_window FROM @webhook_retry_window;
EXECUTE webhook_retry_window;
DEALLOCATE PREPARE webhook_retry_window;
