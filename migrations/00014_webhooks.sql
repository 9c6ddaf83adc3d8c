-- +goose Up
-- Event webhooks (docs/webhooks.md): the endpoints admins register, the
-- events announced to them and one delivery per event and endpoint, kept
-- until delivered or given up (an outbox: an event is written in the
-- transaction of the change it announces, so a crash loses none). Times
-- that the delivery worker compares are Unix milliseconds.
CREATE TABLE webhook_endpoints (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  url TEXT NOT NULL,
  secret TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  events TEXT NOT NULL,
  app TEXT NOT NULL DEFAULT '',
  resource TEXT NOT NULL DEFAULT '',
  enabled BOOLEAN NOT NULL DEFAULT TRUE,
  paused_reason TEXT NOT NULL DEFAULT '',
  paused_at_ms INTEGER NOT NULL DEFAULT 0,
  failures INTEGER NOT NULL DEFAULT 0,
  failing_since_ms INTEGER NOT NULL DEFAULT 0,
  block_rate_percent INTEGER NOT NULL DEFAULT 50,
  block_rate_minutes INTEGER NOT NULL DEFAULT 5,
  created_by TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);

CREATE TABLE webhook_events (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL
);

CREATE TABLE webhook_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id TEXT NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
  endpoint_id INTEGER NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms INTEGER NOT NULL,
  give_up_ms INTEGER NOT NULL DEFAULT 0,
  last_status INTEGER NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  last_attempt_ms INTEGER NOT NULL DEFAULT 0,
  claimed_by TEXT NOT NULL DEFAULT '',
  claim_until_ms INTEGER NOT NULL DEFAULT 0,
  created_at_ms INTEGER NOT NULL,
  UNIQUE (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_ms);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_settled ON webhook_deliveries (state, last_attempt_ms);

-- The state of each instance last announced to the webhooks (live, stale,
-- gone): a replica announces a change only if its conditional update of
-- this row wins, so the replicas that all see it announce it once.
CREATE TABLE webhook_instance_states (
  uid TEXT PRIMARY KEY,
  state TEXT NOT NULL
);

-- The resources whose sustained block rate was announced to an endpoint
-- (resource.blockRate), until their block rate falls under its threshold
-- again: one event per episode, and a replica announces it only if its
-- insert of the row wins.
CREATE TABLE webhook_block_alerts (
  endpoint_id INTEGER NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  resource TEXT NOT NULL,
  PRIMARY KEY (endpoint_id, resource)
);

-- +goose Down
DROP TABLE webhook_block_alerts;
DROP TABLE webhook_instance_states;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_events;
DROP TABLE webhook_endpoints;
