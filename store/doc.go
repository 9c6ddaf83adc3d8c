// Package store persists Sluice's state with GORM over SQLite or
// PostgreSQL: rules and their revisions, users, sessions and API tokens,
// minute metrics with their rollups and the resource catalogue, circuit
// breaker transitions, reporting instances and their minutes, and the
// change announcements by which replicas on one PostgreSQL database learn
// of each other's writes. Open applies the embedded migrations before it
// returns, so a *Store always has the current schema; tests use a real
// database, never a mock.
package store
