-- +goose Up
-- Every circuit breaker state change the engine reports, kept as long as
-- the metrics (the retention job prunes both), so that the console's
-- timeline reaches back past the moment it was opened. id orders the
-- transitions of one millisecond as they happened.
CREATE TABLE breaker_transitions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at_ms INTEGER NOT NULL,
  rule TEXT NOT NULL,
  resource TEXT NOT NULL,
  from_state TEXT NOT NULL,
  to_state TEXT NOT NULL
);
CREATE INDEX breaker_transitions_at ON breaker_transitions (at_ms, id);
CREATE INDEX breaker_transitions_resource_at ON breaker_transitions (resource, at_ms, id);

-- +goose Down
DROP TABLE breaker_transitions;
