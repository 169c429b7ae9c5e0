-- One row per named counter. The name is binary so that names compare and
-- sort byte-wise and case-sensitively. There is deliberately no
-- AUTO_INCREMENT column: its generated id would replace the
-- LAST_INSERT_ID(expr) value that increments read back from the OK packet.
CREATE TABLE IF NOT EXISTS counter (
  name       VARBINARY(255) NOT NULL,
  value      BIGINT         NOT NULL,
  min_value  BIGINT         NULL,
  max_value  BIGINT         NULL,
  created_at DATETIME(6)    NOT NULL,
  updated_at DATETIME(6)    NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB;
