-- +goose Up
-- A username is one whatever its case (ed and ED are one user): login and
-- every lookup match lower(username), which this index keeps unique and
-- serves. The store refuses to migrate a database whose usernames clash
-- so, naming them, before this runs.
CREATE UNIQUE INDEX users_username_lower ON users(lower(username));

-- +goose Down
DROP INDEX users_username_lower;
