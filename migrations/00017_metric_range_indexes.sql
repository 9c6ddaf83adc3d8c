-- +goose Up
-- PostgreSQL's 00017 indexes the metric tables by minute for the rankings.
-- SQLite's need none: its plan reads each resource's range of the primary
-- key in order (store.perResource), within its figures
-- (docs/performance.md), and an index would add to the file and to every
-- flush's writes. The version keeps both directories' versions the same.
SELECT 1;

-- +goose Down
SELECT 1;
