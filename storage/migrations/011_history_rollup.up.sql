-- Rolled-up history: the UTC days that counter_history no longer holds,
-- one row per counter and UTC month (month is the month's first day), so
-- that a year of a counter is 12 small rows and not 365 rows of 96
-- DECIMAL columns (about 1.45 KB each for a busy counter). days packs each
-- day of the month the roll-up moved here (storage/history_pack.go): a
-- recent day keeps all 96 quarter hours, so that hours stay exact; an
-- older one only the sums between the quarter hours where some IANA
-- zone's midnight falls (history.Boundaries), which is all that days and
-- months of any zone need. total is the sum of every day of the row;
-- first_day and full_from (the first day kept in quarter hours, NULL when
-- none) let retention and the roll-up find the rows they must rewrite
-- without reading days. The roll-up moves a day from counter_history into
-- this row in one transaction (storage/history_rollup.go), and a read
-- takes both tables from one snapshot, so a day is counted once, in
-- whichever place it is. (month, name) serves a prefix's months, as
-- (day, name) does in counter_history; full_from the thinning of days
-- that have grown old.
CREATE TABLE IF NOT EXISTS counter_history_month (
  name       VARBINARY(255) NOT NULL,
  month      DATE           NOT NULL,
  total      DECIMAL(30,0)  NOT NULL,
  first_day  DATE           NOT NULL,
  full_from DATE           NULL,
  days       BLOB           NOT NULL,
  PRIMARY KEY (name, month),
  KEY counter_history_month_month (month, name),
  KEY counter_history_month_full (full_from)
) ENGINE=InnoDB;
