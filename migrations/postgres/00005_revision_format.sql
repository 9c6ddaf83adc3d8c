-- +goose Up
-- SQLite's 00005 rewrote revisions stored before the rule domain's format
-- 1; a PostgreSQL database starts at this schema, so it holds none.
SELECT 1;

-- +goose Down
SELECT 1;
