-- +goose Up
-- Two more rollups of the minute rows, kept up to date by every flush in
-- its transaction as metric_hours is: five minutes, for histories at 5m
-- and 15m and for the ends of a ranked range, and UTC days, for histories
-- at 1d and long rankings. A range is then read from a few rows of the
-- coarsest rollup that fits and finer rows at its ends only. Same columns
-- and key as metric_minutes. Plain SQL: start_ms is never negative, so
-- integer division rounds down in PostgreSQL as it does in SQLite.
CREATE TABLE metric_five_minutes (
  resource_id BIGINT NOT NULL,
  start_ms BIGINT NOT NULL,                 -- the five minutes' start, Unix milliseconds
  pass BIGINT NOT NULL,
  block BIGINT NOT NULL,
  shadow_block BIGINT NOT NULL,
  complete BIGINT NOT NULL,
  error BIGINT NOT NULL,
  rt_sum_ms BIGINT NOT NULL,
  rt_min_ms BIGINT,                         -- NULL while no call completed
  rt_max_ms BIGINT NOT NULL,
  max_concurrency BIGINT NOT NULL,
  PRIMARY KEY (resource_id, start_ms)
);
CREATE TABLE metric_days (
  resource_id BIGINT NOT NULL,
  start_ms BIGINT NOT NULL,                 -- the UTC day's start, Unix milliseconds
  pass BIGINT NOT NULL,
  block BIGINT NOT NULL,
  shadow_block BIGINT NOT NULL,
  complete BIGINT NOT NULL,
  error BIGINT NOT NULL,
  rt_sum_ms BIGINT NOT NULL,
  rt_min_ms BIGINT,
  rt_max_ms BIGINT NOT NULL,
  max_concurrency BIGINT NOT NULL,
  PRIMARY KEY (resource_id, start_ms)
);
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
