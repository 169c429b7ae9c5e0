-- Breakdowns' pending labels (see storage/labels_settle.go): an
-- increment's transaction no longer writes counter_label's rows, one per
-- value, each decided against the bound; it adds one row here per counter
-- and UTC day with the labels of its steps packed, beside its counter row.
-- A background pass settles these rows into counter_label, in the order
-- of each counter's writes, deciding each new value against the bound
-- there; reads settle what is still pending the same way, so an answer
-- never depends on whether a pass ran.
-- at is the counter's updated_at after the write, which every write of
-- the counter moves forward under the counter's row lock: a counter's
-- rows here are in the order its writes committed, on every process and
-- every node, and the order of the key is the order they are settled in.
CREATE TABLE IF NOT EXISTS counter_label_pending (
  name VARBINARY(255) NOT NULL,
  at   DATETIME(6)    NOT NULL,
  day  DATE           NOT NULL,
  adds BLOB           NOT NULL,
  PRIMARY KEY (name, at, day)
) ENGINE=InnoDB;

-- The label slot: a round of increments that all count in the quarter
-- hour of its commit (the coalescer's) appends its packed adds to its
-- counter's row, in the upsert it runs anyway, as history's slot does
-- (migration 009): one statement, where a row here would make the round a
-- transaction of two. The slot holds one UTC day (label_day) and a few
-- kilobytes; a write that finds it full, or holding another day, is
-- refused and goes the transactional way, which moves the slot here as a
-- row keyed by the counter's updated_at (every write in the slot came
-- before it) and then adds its own. Reads take the slot as the counter's
-- last pending row. An emptied slot has no day either, so that the key on
-- label_day holds only the slots in use: settling passes find there the
-- slots no write has moved for a while, retention the old ones.
ALTER TABLE counter
  ADD COLUMN IF NOT EXISTS label_day  DATE NULL,
  ADD COLUMN IF NOT EXISTS label_slot BLOB NULL;
CREATE INDEX IF NOT EXISTS counter_label_slot_day ON counter (label_day);

-- Label months (see storage/labels_rollup.go): once no write lands in its
-- days any more, a counter's label value keeps one row per UTC month with
-- its days packed, so that a month's breakdown of a prefix reads a row per
-- value, not thirty. first_day is the index in the month of the first day
-- packed: retention trims the rows that hold days before its horizon.
-- The second key serves a prefix: per month and label, the names under
-- the prefix are one range of it.
CREATE TABLE IF NOT EXISTS counter_label_month (
  name      VARBINARY(255)   NOT NULL,
  label     VARBINARY(32)    NOT NULL,
  month     DATE             NOT NULL,
  value     VARBINARY(128)   NOT NULL,
  first_day TINYINT UNSIGNED NOT NULL,
  days      BLOB             NOT NULL,
  PRIMARY KEY (name, label, month, value),
  KEY counter_label_month_month (month, label, name)
) ENGINE=InnoDB;
