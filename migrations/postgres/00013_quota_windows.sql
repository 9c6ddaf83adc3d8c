-- +goose Up
-- As SQLite's 00013. The passes in the windows of quota rules (a minute or more), saved every
-- few seconds and at shutdown, restored at start, so that a day quota does
-- not start again when the server restarts (docs/engine.md#hour-and-day-quotas).
-- node is the server that counted them; spans a JSON array of [atMs, passes].
CREATE TABLE quota_windows (
    node TEXT NOT NULL,
    resource TEXT NOT NULL,
    rule TEXT NOT NULL,
    value TEXT NOT NULL,
    spans TEXT NOT NULL,
    PRIMARY KEY (node, resource, rule, value)
);

-- +goose Down
DROP TABLE quota_windows;
