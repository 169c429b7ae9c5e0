-- Unique visitors (visitors/). visitor_salt holds one random salt per UTC
-- day, which every process of the service hashes visitors under; the purge
-- deletes each an hour into the next day, so that identifiers cannot be
-- reversed or linked across days once it is gone. It is in MySQL, not in
-- Redis, so that a flushed Redis changes no visitor's identity mid-day.
CREATE TABLE IF NOT EXISTS visitor_salt (
  day  DATE       NOT NULL,
  salt BINARY(32) NOT NULL,
  PRIMARY KEY (day)
) ENGINE=InnoDB;

-- One HyperLogLog sketch (axiomhq/hyperloglog's encoding, precision 16) of a
-- counter's visitors per UTC day: register maxima, no identifier. Sparse
-- sketches take a few bytes per visitor, a dense one 64 KiB and some, hence
-- MEDIUMBLOB. The foreign key deletes a counter's sketches with it (as its
-- history), whatever path deletes the counter; the second key serves a
-- prefix's days as counter_history's does.
CREATE TABLE IF NOT EXISTS visitor_sketch (
  name   VARBINARY(255) NOT NULL,
  day    DATE           NOT NULL,
  sketch MEDIUMBLOB     NOT NULL,
  PRIMARY KEY (name, day),
  KEY visitor_sketch_day (day, name),
  CONSTRAINT visitor_sketch_counter FOREIGN KEY (name) REFERENCES counter (name) ON DELETE CASCADE
) ENGINE=InnoDB;
