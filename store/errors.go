package store

import "errors"

// Errors the store returns, for callers to test with errors.Is; the server
// maps each to an HTTP status in one place.
var (
	// ErrNotFound: no row has the asked-for key.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a unique value (a rule's name) is taken.
	ErrConflict = errors.New("store: conflict")
	// ErrStale: the row changed since the version the caller read.
	ErrStale = errors.New("store: stale version")
)
