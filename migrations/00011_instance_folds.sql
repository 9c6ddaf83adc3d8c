-- +goose Up
-- The minutes of new resource names that an instance reported while the
-- resources table held --max-resources names: their counts went to the
-- instance's (overflow) row, which adds up, so instance_minutes cannot be
-- their idempotency key. This table is: one row per instance, minute and
-- name folded, the name as a 64-bit FNV-1a hash (a few bytes a row, a
-- collision chance of about one in 10^11 among a report's 10,000 names),
-- so a retried report adds nothing. Its key leads with start_ms, so
-- retention prunes it by range.
CREATE TABLE instance_folds (
  start_ms INTEGER NOT NULL,                 -- the minute's start, Unix milliseconds
  instance_id INTEGER NOT NULL,              -- instances.id
  name_hash INTEGER NOT NULL,                -- FNV-1a of the resource name, as a signed 64-bit integer
  PRIMARY KEY (start_ms, instance_id, name_hash)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE instance_folds;
