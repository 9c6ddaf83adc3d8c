// Package migrations holds Sluice's database schema as versioned SQL files
// (NNNNN_name.sql with goose "-- +goose Up" and "-- +goose Down" sections),
// embedded into the binary: SQLite's in this directory (FS), PostgreSQL's,
// the same versions, in postgres/ (Postgres). The store applies them with
// goose at start-up; a new schema change is a new file for each database,
// never an edit of an applied one.
package migrations
