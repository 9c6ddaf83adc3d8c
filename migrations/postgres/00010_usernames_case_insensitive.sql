-- +goose Up
-- As SQLite's 00010.
CREATE UNIQUE INDEX users_username_lower ON users(lower(username));

-- +goose Down
DROP INDEX users_username_lower;
