-- A hook's secret rotation: the secret a rotation replaced keeps signing
-- the calls, beside the new one, until previous_secret_expires_at (a day
-- after the rotation; see webhooks.RotationGrace), so that receivers can
-- take the new one on without refusing a call. Kept as the secret is, not
-- hashed: an HMAC needs the key itself. NULL when no rotation's grace is
-- under way: the relay stops signing with the previous secret when its
-- grace ends, and the purge (storage.HookStore.PurgeEvery) clears it
-- within the minute after.
--
-- Safe to run again (an operator's `migrate force` to an earlier version
-- runs it a second time), but MySQL 8 has no ADD COLUMN IF NOT EXISTS:
-- the ALTER runs only when the column is missing. One ALTER for both
-- columns, so that it applies whole or not at all.
SET @webhook_rotation := IF(
  (SELECT COUNT(*) FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'webhook' AND COLUMN_NAME = 'previous_secret') > 0,
  'DO 0',
  'ALTER TABLE webhook
     ADD COLUMN previous_secret            VARCHAR(128) NULL AFTER secret,
     ADD COLUMN previous_secret_expires_at DATETIME(6)  NULL AFTER previous_secret');
PREPARE webhook_rotation FROM @webhook_rotation;
EXECUTE webhook_rotation;
DEALLOCATE PREPARE webhook_rotation;
