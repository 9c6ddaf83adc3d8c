-- +goose Up
-- Every resource that ever had traffic, so that an idle one is still listed.
CREATE TABLE resources (
  id INTEGER PRIMARY KEY,                    -- a small key keeps the metric rows short
  name TEXT NOT NULL UNIQUE,
  first_seen_ms INTEGER NOT NULL,            -- Unix milliseconds
  last_seen_ms INTEGER NOT NULL
);
CREATE INDEX resources_last_seen ON resources(last_seen_ms);
-- One row per resource and UTC minute with traffic. Flushes add deltas to
-- it (counts add, min of mins, max of maxes). The primary key is the only
-- index: history reads one resource's range of it, and ranking across
-- resources and retention walk it resource by resource.
CREATE TABLE metric_minutes (
  resource_id INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,                 -- the minute's start, Unix milliseconds
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
-- The same figures per UTC hour, kept up to date by every flush, for long
-- ranges and rankings.
CREATE TABLE metric_hours (
  resource_id INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,                 -- the hour's start, Unix milliseconds
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

-- +goose Down
DROP TABLE metric_hours;
DROP TABLE metric_minutes;
DROP TABLE resources;
