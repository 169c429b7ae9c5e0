-- Breakdowns: what increments' labels added, per counter, label, UTC day
-- and value (see storage/labels_write.go). Rows are written in the
-- increment's own transaction, after its counter row (and its history) is
-- locked, so a label is never counted without its step nor the other way
-- round; every writer of a counter's labels holds that counter's row lock,
-- which is what makes the bound on values exact across processes. A
-- counter keeps at most a bound of distinct values per label and day
-- (COUNTERS_BREAKDOWN_VALUES); further values are counted as '(other)'.
-- Steps without the label write nothing: a breakdown's '(none)' is the
-- history's total minus the labelled sum. A UTC day, as counter_history's
-- rows, so that the two are removed together (DELETE of a counter,
-- retention) and a roll-up of history can roll these days up alike.
-- DECIMAL(30,0) as history's cells: a sum of signed steps is not bounded
-- by int64, and an increment must never fail because of its labels.
-- The primary key serves a counter's breakdown by one label (one range)
-- and the bound (the range of one label and day); the second key serves a
-- prefix: per day and label, the names under the prefix are one range of
-- it, and it carries the count, so that such a read never visits the rows;
-- retention removes old days along it.
CREATE TABLE IF NOT EXISTS counter_label (
  name  VARBINARY(255) NOT NULL,
  label VARBINARY(32)  NOT NULL,
  day   DATE           NOT NULL,
  value VARBINARY(128) NOT NULL,
  count DECIMAL(30,0)  NOT NULL,
  PRIMARY KEY (name, label, day, value),
  KEY counter_label_day (day, label, name, value, count)
) ENGINE=InnoDB;
