-- +goose Up
-- As SQLite's 00004: resources becomes the catalogue, with NULL seen times
-- for a resource only rules name, and rule_count kept by a trigger in the
-- transaction of every rule write.
ALTER TABLE resources ALTER COLUMN first_seen_ms DROP NOT NULL;
ALTER TABLE resources ALTER COLUMN last_seen_ms DROP NOT NULL;
ALTER TABLE resources ADD COLUMN rule_count BIGINT NOT NULL DEFAULT 0;
DROP INDEX resources_last_seen;
CREATE INDEX resources_last_seen ON resources(last_seen_ms) WHERE last_seen_ms IS NOT NULL;
INSERT INTO resources (name, rule_count)
  SELECT resource, count(*) FROM rules WHERE resource <> '' GROUP BY resource
  ON CONFLICT (name) DO UPDATE SET rule_count = excluded.rule_count;

-- +goose StatementBegin
CREATE FUNCTION rules_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND (TG_OP = 'DELETE' OR OLD.resource IS DISTINCT FROM NEW.resource) THEN
    UPDATE resources SET rule_count = rule_count - 1 WHERE name = OLD.resource;
    DELETE FROM resources WHERE name = OLD.resource AND rule_count = 0 AND first_seen_ms IS NULL;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.resource <> '' AND (TG_OP = 'INSERT' OR OLD.resource IS DISTINCT FROM NEW.resource) THEN
    INSERT INTO resources (name, rule_count) VALUES (NEW.resource, 1)
      ON CONFLICT (name) DO UPDATE SET rule_count = resources.rule_count + 1;
  END IF;
  RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER rules_count AFTER INSERT OR DELETE OR UPDATE OF resource ON rules
  FOR EACH ROW EXECUTE FUNCTION rules_count();

-- +goose Down
DROP TRIGGER rules_count ON rules;
DROP FUNCTION rules_count();
DELETE FROM resources WHERE first_seen_ms IS NULL;
ALTER TABLE resources DROP COLUMN rule_count;
DROP INDEX resources_last_seen;
CREATE INDEX resources_last_seen ON resources(last_seen_ms);
ALTER TABLE resources ALTER COLUMN first_seen_ms SET NOT NULL;
ALTER TABLE resources ALTER COLUMN last_seen_ms SET NOT NULL;
