// Package store persists Sluice's state (rules and their revisions, minute
// metrics with their rollups; users and tokens later) with GORM over
// SQLite. Open applies the
// embedded migrations before it returns, so a *Store always has the current
// schema; tests use a real database file, never a mock.
package store
