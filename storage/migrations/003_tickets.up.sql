-- Boards and their tickets. A ticket's number (local_id) comes from the
-- board's reserved counter "_tickets/board/<id>" in the counter table, not
-- from this table: the counter keeps the high-water mark, so numbers of
-- deleted tickets are never reused. The unique key is the last line of
-- defence against a duplicate number.
CREATE TABLE IF NOT EXISTS board (
  id         BIGINT       NOT NULL AUTO_INCREMENT,
  company_id BIGINT       NOT NULL,
  slug       VARCHAR(10)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  title      VARCHAR(255) NOT NULL,
  created_at DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY board_company_slug (company_id, slug),
  CONSTRAINT board_company_positive CHECK (company_id > 0),
  CONSTRAINT board_title_not_empty CHECK (CHAR_LENGTH(title) > 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Limits are in characters, as in the API: VARCHAR(n) of utf8mb4 counts
-- characters, and strict mode refuses longer values instead of cutting them.
CREATE TABLE IF NOT EXISTS ticket (
  id          BIGINT        NOT NULL AUTO_INCREMENT,
  board_id    BIGINT        NOT NULL,
  local_id    BIGINT        NOT NULL,
  title       VARCHAR(255)  NOT NULL,
  description VARCHAR(3000) NOT NULL DEFAULT '',
  created_at  DATETIME(6)   NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY ticket_board_local (board_id, local_id),
  CONSTRAINT ticket_board FOREIGN KEY (board_id) REFERENCES board (id),
  CONSTRAINT ticket_local_positive CHECK (local_id > 0),
  CONSTRAINT ticket_title_not_empty CHECK (CHAR_LENGTH(title) > 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
