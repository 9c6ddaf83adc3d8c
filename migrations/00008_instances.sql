-- +goose Up
-- The instances registry: every app process that embeds the engine and
-- reports to this server (POST /api/v1/instances/report). uid is the id
-- the instance gives itself; id is a small key for its metric rows,
-- AUTOINCREMENT so that a pruned instance's key is never given to another.
CREATE TABLE instances (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uid TEXT NOT NULL UNIQUE,
  app TEXT NOT NULL DEFAULT '',
  hostname TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  version TEXT NOT NULL DEFAULT '',
  rules_revision INTEGER NOT NULL DEFAULT 0,
  first_seen_ms INTEGER NOT NULL,            -- Unix milliseconds
  last_seen_ms INTEGER NOT NULL
);
CREATE INDEX instances_last_seen ON instances(last_seen_ms);
-- One row per resource, UTC minute and instance that reported it: the
-- instance's own figures of that minute, as reported. The history keeps
-- reading the summed tables (metric_minutes and its rollups), which a
-- report adds to in the same transaction, so the history stays the sum
-- over the server's engine and every instance and costs what it cost
-- before, however many instances report. This table is the report's
-- idempotency key: a minute is added to the sums only when its row is
-- inserted here, so a retried report adds nothing. It also answers the
-- history narrowed to one instance (?instance=), reading the resource's
-- range of the key and keeping that instance's rows. Its key leads with
-- (resource_id, start_ms), as the other metric tables' do, so retention
-- prunes it resource by resource like them.
CREATE TABLE instance_minutes (
  resource_id INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,                 -- the minute's start, Unix milliseconds
  instance_id INTEGER NOT NULL,              -- instances.id
  pass INTEGER NOT NULL,
  block INTEGER NOT NULL,
  shadow_block INTEGER NOT NULL,
  complete INTEGER NOT NULL,
  error INTEGER NOT NULL,
  rt_sum_ms INTEGER NOT NULL,
  rt_min_ms INTEGER,                         -- NULL while no call completed
  rt_max_ms INTEGER NOT NULL,
  max_concurrency INTEGER NOT NULL,
  PRIMARY KEY (resource_id, start_ms, instance_id)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE instance_minutes;
DROP TABLE instances;
