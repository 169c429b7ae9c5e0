-- The history slot: each counter's row also keeps the sum of the steps of
-- one quarter hour, history_quarter (quarter hours since 1970-01-01 UTC),
-- so that an increment adds to its history in its own single statement,
-- with no transaction and no second table. A quarter's figure is its
-- counter_history cell plus the slot when the slot holds that quarter;
-- an increment of another quarter first moves a non-zero slot into
-- counter_history (see storage/history_write.go). DECIMAL(30,0) as
-- counter_history's cells, for the same reason. Both NULL while the
-- counter has no slot. On MariaDB 10.3+ and MySQL 8 adding the columns
-- is instant, whatever the table's size. One ALTER, so that it applies
-- whole or not at all, run only when the columns are missing, so that the
-- migration is safe to repeat (MySQL 8 has no ADD COLUMN IF NOT EXISTS).
SET @counters_ddl = IF((SELECT COUNT(*) FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = 'counter' AND column_name = 'history_quarter') = 0,
  'ALTER TABLE counter ADD COLUMN history_quarter INT NULL, ADD COLUMN history_sum DECIMAL(30,0) NULL',
  'DO 0');
PREPARE counters_ddl FROM @counters_ddl;
EXECUTE counters_ddl;
DEALLOCATE PREPARE counters_ddl;
