-- +goose Up
CREATE TABLE rules (
  id INTEGER PRIMARY KEY AUTOINCREMENT,      -- AUTOINCREMENT: ids are never reused
  name TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  resource TEXT NOT NULL,
  enabled BOOLEAN NOT NULL DEFAULT 1,
  mode TEXT NOT NULL DEFAULT 'enforce',
  description TEXT NOT NULL DEFAULT '',
  spec TEXT NOT NULL,                        -- kind-specific fields as validated JSON
  version INTEGER NOT NULL,
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
CREATE INDEX rules_resource ON rules(resource);
CREATE INDEX rules_kind ON rules(kind);
CREATE TABLE rule_revisions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  rule_id INTEGER NOT NULL,                  -- no foreign key: a deleted rule's history stays
  version INTEGER NOT NULL,
  action TEXT NOT NULL,                      -- create | update | delete | rollback
  content TEXT NOT NULL,                     -- the full rule as JSON, as it was
  actor TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL,
  UNIQUE(rule_id, version)
);

-- +goose Down
DROP TABLE rule_revisions;
DROP TABLE rules;
