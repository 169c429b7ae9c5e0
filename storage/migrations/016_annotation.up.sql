-- Annotations: a short text on a counter name or on a prefix (is_prefix)
-- at a moment. (015 is left to the alerts of the same issue, #44.) The
-- target is a name as the counters keep theirs (bytes, case-sensitive);
-- text is at most 280 characters, which utf8mb4 counts as the API does
-- (code points). An annotation belongs to its name, not to a counter row:
-- it may stand before the counter exists, and stays when the counter is
-- deleted. (target, at) serves both reads: the name and the prefixes that
-- hold it by equality, the names under a prefix by range.
CREATE TABLE IF NOT EXISTS annotation (
  id         BIGINT         NOT NULL AUTO_INCREMENT,
  target     VARBINARY(255) NOT NULL,
  is_prefix  BOOLEAN        NOT NULL,
  at         DATETIME(6)    NOT NULL,
  text       VARCHAR(280)   NOT NULL,
  created_at DATETIME(6)    NOT NULL,
  PRIMARY KEY (id),
  KEY annotation_target (target, at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
