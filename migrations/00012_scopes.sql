-- +goose Up
-- Per-app scopes (docs/api.md, "Per-app scopes"): a user or token may be held
-- to the rules of some apps. apps is a JSON array of app names; '' is no
-- scope, so every existing user and token keeps what it could do.
ALTER TABLE users ADD COLUMN apps TEXT NOT NULL DEFAULT '';
ALTER TABLE api_tokens ADD COLUMN apps TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN apps;
ALTER TABLE users DROP COLUMN apps;
