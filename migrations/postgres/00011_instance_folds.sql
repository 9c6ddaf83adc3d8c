-- +goose Up
-- As SQLite's 00011: the folded minutes' idempotency key.
CREATE TABLE instance_folds (
  start_ms BIGINT NOT NULL,                  -- the minute's start, Unix milliseconds
  instance_id BIGINT NOT NULL,               -- instances.id
  name_hash BIGINT NOT NULL,                 -- FNV-1a of the resource name, as a signed 64-bit integer
  PRIMARY KEY (start_ms, instance_id, name_hash)
);

-- +goose Down
DROP TABLE instance_folds;
