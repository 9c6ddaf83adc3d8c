-- +goose Up
-- resources becomes the catalogue GET /resources pages through in SQL:
-- every resource that had traffic or that a rule names. The seen times are
-- NULL while a resource named by a rule had no traffic (or none within
-- retention); rule_count counts the rules, disabled ones too, that name
-- it, kept by the triggers below in the transaction of every rule write
-- (a rule without a resource, as system rules will be, counts for none).
-- Ids are kept: the metric rows point at them.
CREATE TABLE resources_catalogue (
  id INTEGER PRIMARY KEY,                    -- a small key keeps the metric rows short
  name TEXT NOT NULL UNIQUE,                 -- the index the list pages through, in name order
  first_seen_ms INTEGER,                     -- Unix milliseconds; NULL: no traffic
  last_seen_ms INTEGER,
  rule_count INTEGER NOT NULL DEFAULT 0
);
INSERT INTO resources_catalogue (id, name, first_seen_ms, last_seen_ms)
  SELECT id, name, first_seen_ms, last_seen_ms FROM resources;
DROP TABLE resources;
ALTER TABLE resources_catalogue RENAME TO resources;
-- Retention looks up rows by their last traffic: those without have no
-- place in the index, so a rule write adds none.
CREATE INDEX resources_last_seen ON resources(last_seen_ms) WHERE last_seen_ms IS NOT NULL;
INSERT INTO resources (name, rule_count)
  SELECT resource, count(*) FROM rules WHERE resource <> '' GROUP BY resource
  ON CONFLICT (name) DO UPDATE SET rule_count = excluded.rule_count;

-- +goose StatementBegin
CREATE TRIGGER rules_count_insert AFTER INSERT ON rules WHEN NEW.resource <> '' BEGIN
  INSERT INTO resources (name, rule_count) VALUES (NEW.resource, 1)
    ON CONFLICT (name) DO UPDATE SET rule_count = rule_count + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rules_count_delete AFTER DELETE ON rules WHEN OLD.resource <> '' BEGIN
  UPDATE resources SET rule_count = rule_count - 1 WHERE name = OLD.resource;
  DELETE FROM resources WHERE name = OLD.resource AND rule_count = 0 AND first_seen_ms IS NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rules_count_update AFTER UPDATE OF resource ON rules
  WHEN OLD.resource IS NOT NEW.resource BEGIN
  UPDATE resources SET rule_count = rule_count - 1 WHERE name = OLD.resource;
  DELETE FROM resources WHERE name = OLD.resource AND rule_count = 0 AND first_seen_ms IS NULL;
  INSERT INTO resources (name, rule_count) SELECT NEW.resource, 1 WHERE NEW.resource <> ''
    ON CONFLICT (name) DO UPDATE SET rule_count = rule_count + 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER rules_count_update;
DROP TRIGGER rules_count_delete;
DROP TRIGGER rules_count_insert;
CREATE TABLE resources_traffic (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL
);
INSERT INTO resources_traffic (id, name, first_seen_ms, last_seen_ms)
  SELECT id, name, first_seen_ms, last_seen_ms FROM resources WHERE first_seen_ms IS NOT NULL;
DROP TABLE resources;
ALTER TABLE resources_traffic RENAME TO resources;
CREATE INDEX resources_last_seen ON resources(last_seen_ms);
