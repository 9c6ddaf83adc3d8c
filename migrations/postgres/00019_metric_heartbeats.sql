-- +goose Up
-- As SQLite's 00019.
-- The UTC minutes in which a server ran its metrics pipeline, kept as long
-- as the minute rows: a minute of the history without a row was idle if a
-- server was up in it, unknown (an outage) if none was (docs/api.md).
CREATE TABLE metric_heartbeats (
    minute_ms BIGINT NOT NULL PRIMARY KEY
);

-- +goose Down
DROP TABLE metric_heartbeats;
