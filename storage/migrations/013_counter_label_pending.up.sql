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
