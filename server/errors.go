package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/check"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/server/metrics"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/store"
)

// Error is an error with its HTTP answer. Handlers return one to choose the
// status, code and message the client sees; any other error becomes a 500
// whose detail is logged and never sent.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Code is the stable, machine-readable name of the error (docs/api.md).
	Code string
	// Message is a sentence for a person.
	Message string
	// Details name the fields or parameters at fault, if any.
	Details []FieldError
}

// Error returns the code and the message.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// FieldError names one bad body field (a JSON path such as
// "rules[3].threshold") or query or path parameter.
type FieldError struct {
	// Field is the field's JSON path or the parameter's name.
	Field string `json:"field" example:"threshold" validate:"required"`
	// Message says what is wrong with it.
	Message string `json:"message" example:"must be >= 0" validate:"required"`
}

// ErrorResponse is the body of every error answer. Its fields are always
// present, so the validate tags mark them required for swag; nothing
// validates them at run time.
type ErrorResponse struct {
	// Error describes what went wrong.
	Error ErrorBody `json:"error" validate:"required"`
}

// ErrorBody is the error inside an ErrorResponse.
type ErrorBody struct {
	// Code is the stable name of the error, one per status.
	Code string `json:"code" example:"validation_failed" validate:"required"`
	// Message is a sentence for a person.
	Message string `json:"message" example:"the rule is not valid" validate:"required"`
	// Details name the fields or parameters at fault; always an array.
	Details []FieldError `json:"details" validate:"required"`
}

// codeByStatus is docs/api.md's table of error codes.
var codeByStatus = map[int]string{
	http.StatusBadRequest:            "bad_request",
	http.StatusUnauthorized:          "unauthorized",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "not_found",
	http.StatusMethodNotAllowed:      "method_not_allowed",
	http.StatusConflict:              "conflict",
	http.StatusPreconditionFailed:    "precondition_failed",
	http.StatusRequestEntityTooLarge: "payload_too_large",
	http.StatusUnprocessableEntity:   "validation_failed",
	http.StatusTooManyRequests:       "too_many_requests",
	http.StatusInternalServerError:   "internal",
}

// codeForStatus names a status: docs/api.md's code where it has one, else the
// status text in snake case (a 408 from the HTTP layer is
// "request_timeout").
func codeForStatus(status int) string {
	if code, ok := codeByStatus[status]; ok {
		return code
	}
	text := http.StatusText(status)
	if text == "" {
		return "error"
	}
	return strings.ReplaceAll(strings.ToLower(strings.ReplaceAll(text, "-", " ")), " ", "_")
}

// NewError returns an error answered with status, the code docs/api.md gives it,
// message and details.
func NewError(status int, message string, details ...FieldError) *Error {
	return &Error{Status: status, Code: codeForStatus(status), Message: message, Details: details}
}

// BadRequest is a 400 for a body that is not JSON at all or a bad query or
// path parameter, which details name.
func BadRequest(message string, details ...FieldError) *Error {
	return NewError(http.StatusBadRequest, message, details...)
}

// NotFound is a 404 for a rule, version or resource that does not exist.
func NotFound(message string) *Error {
	return NewError(http.StatusNotFound, message)
}

// Conflict is a 409, e.g. for a rule name already taken.
func Conflict(message string) *Error {
	return NewError(http.StatusConflict, message)
}

// PreconditionFailed is a 412 for a stale If-Match.
func PreconditionFailed(message string) *Error {
	return NewError(http.StatusPreconditionFailed, message)
}

// ValidationFailed is a 422 for bad body fields, each named in details
// once (docs/api.md): a field found bad twice (a number where a string belongs,
// and so missing) is told by its first detail.
func ValidationFailed(message string, details ...FieldError) *Error {
	once := make([]FieldError, 0, len(details))
	named := make(map[string]bool, len(details))
	for _, d := range details {
		if !named[d.Field] {
			named[d.Field] = true
			once = append(once, d)
		}
	}
	return NewError(http.StatusUnprocessableEntity, message, once...)
}

// handleError is the app's only writer of error bodies: handler errors,
// Fiber's own 404, 405 and 413, and recovered panics all come here.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	apiErr := s.apiError(c, err)
	details := apiErr.Details
	if details == nil {
		details = []FieldError{}
	}
	return c.Status(apiErr.Status).JSON(ErrorResponse{Error: ErrorBody{
		Code:    apiErr.Code,
		Message: apiErr.Message,
		Details: details,
	}}, fiber.MIMEApplicationJSONCharsetUTF8)
}

// apiError maps any error to what the client is told.
func (s *Server) apiError(c *fiber.Ctx, err error) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	if invalid, ok := errors.AsType[*check.ValidationError](err); ok {
		return ValidationFailed(invalid.Message, fieldErrors(invalid.Fields)...)
	}
	if bad, ok := errors.AsType[*check.BodyError](err); ok {
		return s.apiError(c, errNotJSONObject(bad.Err))
	}
	if invalid, ok := errors.AsType[*rules.ValidationError](err); ok {
		return ValidationFailed(invalid.Message, fieldErrors(invalid.Fields)...)
	}
	if denied, ok := errors.AsType[*rules.ForbiddenError](err); ok {
		return NewError(http.StatusForbidden, denied.Message, fieldErrors(denied.Fields)...)
	}
	if invalid, ok := errors.AsType[*engine.ValidationError](err); ok {
		return ValidationFailed(err.Error(), fieldErrors(invalid.Fields)...)
	}
	if bad, ok := errors.AsType[*codec.YAMLError](err); ok {
		if bad.Field == "" {
			return BadRequest(bad.Message)
		}
		return BadRequest(bad.Message, FieldError{bad.Field, bad.Problem})
	}
	var badParam *metrics.ParamError
	if errors.As(err, &badParam) {
		return BadRequest(badParam.Error(), FieldError{badParam.Param, badParam.Message})
	}
	var unknown *metrics.UnknownResourceError
	if errors.As(err, &unknown) {
		return NotFound(unknown.Error())
	}
	switch {
	case errors.Is(err, check.ErrUnknownEntry):
		return NotFound(storeMessage(err, check.ErrUnknownEntry, "no entry has this id"))
	case errors.Is(err, check.ErrEntryEnded):
		return Conflict(storeMessage(err, check.ErrEntryEnded, "the entry has ended"))
	case errors.Is(err, rules.ErrNotFound):
		return NotFound(storeMessage(err, rules.ErrNotFound, "not found"))
	case errors.Is(err, rules.ErrConflict):
		return Conflict(storeMessage(err, rules.ErrConflict, "the name is taken"))
	case errors.Is(err, rules.ErrStale):
		return PreconditionFailed(storeMessage(err, rules.ErrStale, "the version does not match If-Match"))
	case errors.Is(err, store.ErrNotFound):
		return NotFound(storeMessage(err, store.ErrNotFound, "not found"))
	case errors.Is(err, store.ErrConflict):
		return Conflict(storeMessage(err, store.ErrConflict, "the name is taken"))
	case errors.Is(err, store.ErrStale):
		return PreconditionFailed(storeMessage(err, store.ErrStale, "the version does not match If-Match"))
	}
	var fiberErr *fiber.Error
	if errors.As(err, &fiberErr) && fiberErr.Code < http.StatusInternalServerError {
		return NewError(fiberErr.Code, s.fiberMessage(c, fiberErr))
	}
	s.logger.ErrorContext(c.UserContext(), "internal error",
		"method", c.Method(), "path", c.Path(), "error", err)
	return NewError(http.StatusInternalServerError, "the server failed to answer; the error is logged")
}

// fieldErrors are the engine's and the decoders' field errors as details.
func fieldErrors(fields []engine.FieldError) []FieldError {
	details := make([]FieldError, len(fields))
	for i, f := range fields {
		details[i] = FieldError(f)
	}
	return details
}

// storeMessage is the message a handler or the rule domain wrapped around
// a sentinel error ("no rule has id 7: rules: not found" gives "no rule has
// id 7"), or fallback if it was not wrapped.
func storeMessage(err, sentinel error, fallback string) string {
	msg, wrapped := strings.CutSuffix(err.Error(), ": "+sentinel.Error())
	if !wrapped || msg == "" {
		return fallback
	}
	return msg
}

// fiberMessage rewrites Fiber's terse messages for the statuses it raises
// itself into sentences that tell the client what to change.
func (s *Server) fiberMessage(c *fiber.Ctx, err *fiber.Error) string {
	switch err.Code {
	case http.StatusNotFound:
		return fmt.Sprintf("no route for %s %s", c.Method(), c.Path())
	case http.StatusMethodNotAllowed:
		// Fiber's Allow lists every method some route of the path's
		// shape has; a fixed path's own methods are the right ones.
		if allow, ok := s.fixedPaths.allow(c.Path()); ok {
			c.Set(fiber.HeaderAllow, allow)
		}
		return fmt.Sprintf("%s is not allowed on %s; allowed: %s",
			c.Method(), c.Path(), c.GetRespHeader(fiber.HeaderAllow))
	case http.StatusRequestEntityTooLarge:
		return fmt.Sprintf("the request body is over the limit of %d bytes", maxBodyBytes)
	}
	return err.Message
}
