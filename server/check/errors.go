package check

import (
	"errors"

	"github.com/sluicehq/sluice/engine"
)

// The check API's errors about entries, each wrapped with a sentence that
// names the entry (`entry "9f3c-1" was completed already, at …: check:
// entry ended`).
var (
	// ErrUnknownEntry: no entry has the id; it never existed, or was
	// completed long ago.
	ErrUnknownEntry = errors.New("check: unknown entry")
	// ErrEntryEnded: the entry was completed already, its lease ran out,
	// or a complete without entryId ended it as a probe.
	ErrEntryEnded = errors.New("check: entry ended")
)

// ValidationError is a body, or a complete, that is not valid: every bad
// field, named by its path ("checks[3].count").
type ValidationError struct {
	// Message is a sentence for a person.
	Message string
	// Fields names every bad field.
	Fields []engine.FieldError
}

func (e *ValidationError) Error() string { return e.Message }

// BodyError is a body that is no JSON object, or no JSON a decoder should
// take; Err is package codec's reason.
type BodyError struct {
	Err error
}

func (e *BodyError) Error() string { return e.Err.Error() }

// Unwrap returns codec's reason.
func (e *BodyError) Unwrap() error { return e.Err }

func invalid(message string, fields ...engine.FieldError) *ValidationError {
	return &ValidationError{Message: message, Fields: fields}
}

func field(name, message string) engine.FieldError {
	return engine.FieldError{Field: name, Message: message}
}
