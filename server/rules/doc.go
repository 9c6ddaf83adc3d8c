// Package rules is the rule domain behind the REST handlers: the rule and
// its strict decoding, driven by the engine's field tables; every write
// (create, update, delete, apply, Sentinel import, rollback) in one store
// transaction with its revision; and the engine's rules, kept equal to the
// stored ones. It returns domain errors (ValidationError, ErrNotFound,
// ErrConflict, ErrStale) and plain plan types, and knows nothing of HTTP.
package rules
