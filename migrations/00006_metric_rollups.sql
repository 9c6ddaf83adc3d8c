-- +goose Up
-- Two more rollups of the minute rows, kept up to date by every flush in
-- its transaction as metric_hours is: five minutes, for histories at 5m
-- and 15m and for the ends of a ranked range, and UTC days, for histories
-- at 1d and long rankings. A range is then read from a few rows of the
-- coarsest rollup that fits and finer rows at its ends only. Same columns
-- and key as metric_minutes. Plain SQL: start_ms is never negative, so
-- integer division rounds down in PostgreSQL as it does in SQLite; only
-- WITHOUT ROWID (a clustered key) is SQLite's, and PostgreSQL drops it.
CREATE TABLE metric_five_minutes (
  resource_id INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,                 -- the five minutes' start, Unix milliseconds
  pass INTEGER NOT NULL,
  block INTEGER NOT NULL,
  shadow_block INTEGER NOT NULL,
  complete INTEGER NOT NULL,
  error INTEGER NOT NULL,
  rt_sum_ms INTEGER NOT NULL,
  rt_min_ms INTEGER,                         -- NULL while no call completed
  rt_max_ms INTEGER NOT NULL,
  max_concurrency INTEGER NOT NULL,
  PRIMARY KEY (resource_id, start_ms)
) WITHOUT ROWID;
CREATE TABLE metric_days (
  resource_id INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,                 -- the UTC day's start, Unix milliseconds
  pass INTEGER NOT NULL,
  block INTEGER NOT NULL,
  shadow_block INTEGER NOT NULL,
  complete INTEGER NOT NULL,
  error INTEGER NOT NULL,
  rt_sum_ms INTEGER NOT NULL,
  rt_min_ms INTEGER,
  rt_max_ms INTEGER NOT NULL,
  max_concurrency INTEGER NOT NULL,
  PRIMARY KEY (resource_id, start_ms)
) WITHOUT ROWID;
-- The history already stored, rolled up: five minutes from the minutes,
-- days from the hours, which sum the same minutes.
INSERT INTO metric_five_minutes
  SELECT resource_id, start_ms / 300000 * 300000,
    sum(pass), sum(block), sum(shadow_block), sum(complete), sum(error), sum(rt_sum_ms),
    min(rt_min_ms), max(rt_max_ms), max(max_concurrency)
  FROM metric_minutes GROUP BY resource_id, start_ms / 300000 * 300000;
INSERT INTO metric_days
  SELECT resource_id, start_ms / 86400000 * 86400000,
    sum(pass), sum(block), sum(shadow_block), sum(complete), sum(error), sum(rt_sum_ms),
    min(rt_min_ms), max(rt_max_ms), max(max_concurrency)
  FROM metric_hours GROUP BY resource_id, start_ms / 86400000 * 86400000;

-- +goose Down
DROP TABLE metric_days;
DROP TABLE metric_five_minutes;
