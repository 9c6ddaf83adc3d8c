package rules

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// The domain's errors, each wrapped with a sentence that names the rule
// ("no rule has id 7: rules: not found").
var (
	// ErrNotFound: no such rule, or no such version of it.
	ErrNotFound = errors.New("rules: not found")
	// ErrConflict: the rule's name is taken by another rule.
	ErrConflict = errors.New("rules: conflict")
	// ErrStale: the write was based on another version than the stored one.
	ErrStale = errors.New("rules: stale version")
)

// ValidationError is a rule, or a set of rules, that is not valid: every
// bad field, named by its path ("rules[3].threshold").
type ValidationError struct {
	// Message is a sentence for a person.
	Message string
	// Fields names every bad field.
	Fields []engine.FieldError
}

func (e *ValidationError) Error() string { return e.Message }

// ForbiddenError is a write outside the writer's per-app scope
// (Actor.Apps): nothing was written. Fields names each app field at fault
// ("app", "rules[3].app").
type ForbiddenError struct {
	// Message is a sentence for a person.
	Message string
	// Fields names every rule out of scope.
	Fields []engine.FieldError
}

func (e *ForbiddenError) Error() string { return e.Message }

func invalid(message string, fields ...engine.FieldError) *ValidationError {
	return &ValidationError{Message: message, Fields: fields}
}

// domainError words the store's sentinel errors as the domain's, keeping the
// sentence they were wrapped with; the engine's verdict on a rule set
// becomes a ValidationError.
func domainError(err error) error {
	if err == nil {
		return nil
	}
	if engineErr, ok := errors.AsType[*engine.ValidationError](err); ok {
		return invalid(err.Error(), engineErr.Fields...)
	}
	for _, m := range []struct{ from, to error }{
		{store.ErrNotFound, ErrNotFound}, {store.ErrConflict, ErrConflict}, {store.ErrStale, ErrStale},
	} {
		if !errors.Is(err, m.from) {
			continue
		}
		if msg, wrapped := strings.CutSuffix(err.Error(), ": "+m.from.Error()); wrapped && msg != "" {
			return fmt.Errorf("%s: %w", msg, m.to)
		}
		return m.to
	}
	return err
}
