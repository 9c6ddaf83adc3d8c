// Package rules is the rule domain behind the REST handlers: every write
// (create, update, delete, apply, Sentinel import, rollback) of a rule as
// engine/wire decodes it, in one store transaction with its revision; the
// engine's rules, kept equal to the stored ones; and the rule as the API
// shows it (Content, APIRule, whose kind fields are generated from the
// kinds' tables). It returns domain errors (ValidationError, ErrNotFound,
// ErrConflict, ErrStale) and plain plan types, and knows nothing of HTTP.
package rules
