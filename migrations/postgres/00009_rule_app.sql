-- +goose Up
-- As SQLite's 00009. A rule may name the app it reaches (docs/api.md, the rule
-- field app): only the instances of that app run it, and the server's own
-- engine does not.
-- '' is no app: the rule reaches every engine. The index serves
-- GET /rules?app= and keeps a snapshot's rules of one app cheap to find.
ALTER TABLE rules ADD COLUMN app TEXT NOT NULL DEFAULT '';
CREATE INDEX rules_app ON rules(app);

-- +goose Down
DROP INDEX rules_app;
ALTER TABLE rules DROP COLUMN app;
