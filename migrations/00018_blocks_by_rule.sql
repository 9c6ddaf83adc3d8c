-- +goose Up
-- The calls blocked per rule and reason (docs/engine.md#statistics) beside
-- each metric table: a row per resource, span, reason and rule that blocked
-- in it, summed from the server's engine and the instances in the
-- transaction that adds the span's counts, rolled up and pruned with them.
-- The rows of a span sum to its block column. rule is '' for what no rule
-- of the resource decided (reason system).
-- WITHOUT ROWID: the key is the row, as in metric_minutes.
CREATE TABLE metric_minute_blocks (
  resource_id INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,              -- the minute's start, Unix milliseconds
  reason TEXT NOT NULL,
  rule TEXT NOT NULL,
  blocked INTEGER NOT NULL,
  PRIMARY KEY (resource_id, start_ms, reason, rule)
) WITHOUT ROWID;
CREATE TABLE metric_five_minute_blocks (
  resource_id INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,              -- the five minutes' start, Unix milliseconds
  reason TEXT NOT NULL,
  rule TEXT NOT NULL,
  blocked INTEGER NOT NULL,
  PRIMARY KEY (resource_id, start_ms, reason, rule)
) WITHOUT ROWID;
CREATE TABLE metric_hour_blocks (
  resource_id INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,              -- the hour's start, Unix milliseconds
  reason TEXT NOT NULL,
  rule TEXT NOT NULL,
  blocked INTEGER NOT NULL,
  PRIMARY KEY (resource_id, start_ms, reason, rule)
) WITHOUT ROWID;
CREATE TABLE metric_day_blocks (
  resource_id INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,              -- the UTC day's start, Unix milliseconds
  reason TEXT NOT NULL,
  rule TEXT NOT NULL,
  blocked INTEGER NOT NULL,
  PRIMARY KEY (resource_id, start_ms, reason, rule)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE metric_day_blocks;
DROP TABLE metric_hour_blocks;
DROP TABLE metric_five_minute_blocks;
DROP TABLE metric_minute_blocks;
