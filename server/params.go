package server

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/server/metrics"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/store"
)

// Page size bounds of every list (docs/api.md).
const (
	defaultPageSize = 50
	maxPageSize     = 500
	maxReasonLen    = 1024
)

// maxTimeMs is the end of year 9999, the last time RFC 3339 can write: the
// latest time a query parameter takes.
const maxTimeMs = 253_402_300_799_999

// badParams gathers a request's bad query parameters, so that it is
// answered one 400 naming every one of them rather than only the first: a
// handler notes what each parameter reader returns, then returns err
// before it uses any of the values.
type badParams struct {
	details []FieldError
	first   error // the first error noted, answered as is when it is alone
	other   error // an error that names no parameter, answered first
}

// note records err, what a parameter reader returned: nil, a 400 naming
// parameters, or a metrics.ParamError.
func (b *badParams) note(err error) {
	if err == nil {
		return
	}
	var details []FieldError
	if apiErr, ok := errors.AsType[*Error](err); ok && apiErr.Status == http.StatusBadRequest && len(apiErr.Details) > 0 {
		details = apiErr.Details
	} else if param, ok := errors.AsType[*metrics.ParamError](err); ok {
		details = []FieldError{{param.Param, param.Message}}
	} else {
		b.other = cmp.Or(b.other, err)
		return
	}
	if b.first == nil {
		b.first = err
	}
	b.details = append(b.details, details...)
}

// add records that parameter name is bad: msg says why.
func (b *badParams) add(name, msg string) {
	b.note(BadRequest(name+" "+msg, FieldError{name, msg}))
}

// err is nil when no parameter was bad, else the one 400 naming them all.
func (b *badParams) err() error {
	switch {
	case b.other != nil:
		return b.other
	case len(b.details) <= 1:
		return b.first
	}
	names := make([]string, len(b.details))
	for i, d := range b.details {
		names[i] = d.Field
	}
	return BadRequest(fmt.Sprintf("%d query parameters are bad (%s); see details", len(names), strings.Join(names, ", ")), b.details...)
}

// pageParams reads ?page=&pageSize=.
func pageParams(c *fiber.Ctx) (store.Page, error) {
	var bad badParams
	page := store.Page{Number: 1, Size: defaultPageSize}
	if v := c.Query("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			bad.add("page", "must be a whole number >= 1")
		}
		page.Number = n
	}
	if v := c.Query("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			bad.add("pageSize", fmt.Sprintf("must be a whole number from 1 to %d", maxPageSize))
		}
		page.Size = n
	}
	if err := bad.err(); err != nil {
		return page, err
	}
	// Past this the offset overflows, and no list is that long.
	if page.Number > 1<<40/page.Size {
		return page, BadRequest("page is too large", FieldError{"page", "is too large"})
	}
	return page, nil
}

// boolParam reads an optional true/false query parameter.
func boolParam(c *fiber.Ctx, name string) (*bool, error) {
	v := c.Query(name)
	if v == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return nil, BadRequest(name+" must be true or false", FieldError{name, "must be true or false"})
	}
	return &b, nil
}

// searchParam reads a free-text query parameter such as ?q=: any text
// without control characters, which (a NUL, say) would otherwise reach
// the database's LIKE pattern.
func searchParam(c *fiber.Ctx, name string) (string, error) {
	v := c.Query(name)
	if strings.ContainsFunc(v, unicode.IsControl) {
		msg := "must not contain control characters"
		return "", BadRequest(name+" "+msg, FieldError{name, msg})
	}
	return v, nil
}

// idParam reads a positive integer path parameter in its one spelling:
// decimal digits without a sign or a leading zero (docs/api.md: a path has one
// spelling), so /rules/04 and /rules/+4 are not /rules/4.
func idParam(c *fiber.Ctx, name string) (int64, error) {
	raw := c.Params(name)
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 || strconv.FormatInt(id, 10) != raw {
		return 0, BadRequest(name+" must be a positive whole number", FieldError{name, "must be a positive whole number"})
	}
	return id, nil
}

// ifMatch is a parsed If-Match header: absent, "*", or a list of versions.
type ifMatch struct {
	present  bool
	any      bool
	versions []string
}

func ifMatchHeader(c *fiber.Ctx) ifMatch {
	h := strings.TrimSpace(c.Get(fiber.HeaderIfMatch))
	if h == "" {
		return ifMatch{}
	}
	m := ifMatch{present: true}
	for _, tag := range strings.Split(h, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" {
			m.any = true
		}
		tag = strings.TrimPrefix(tag, "W/")
		m.versions = append(m.versions, strings.Trim(tag, `"`))
	}
	return m
}

// allows reports whether a write based on the header may change a rule
// now at version: with no header or "*", any version.
func (m ifMatch) allows(version int64) bool {
	if !m.present || m.any {
		return true
	}
	return slices.Contains(m.versions, strconv.FormatInt(version, 10))
}

// setETag sets the ETag of a resource at version.
func setETag(c *fiber.Ctx, version int64) {
	c.Set(fiber.HeaderETag, `"`+strconv.FormatInt(version, 10)+`"`)
}

// changeActor is who makes a write and why (X-Change-Reason: at most
// maxReasonLen characters of UTF-8, no control characters).
func changeActor(c *fiber.Ctx) (rules.Actor, error) {
	reason := c.Get("X-Change-Reason")
	if utf8.RuneCountInString(reason) > maxReasonLen || !utf8.ValidString(reason) {
		msg := fmt.Sprintf("must be valid UTF-8 of at most %d characters", maxReasonLen)
		return rules.Actor{}, BadRequest("X-Change-Reason "+msg, FieldError{"X-Change-Reason", msg})
	}
	if strings.ContainsFunc(reason, unicode.IsControl) {
		msg := "must not contain control characters"
		return rules.Actor{}, BadRequest("X-Change-Reason "+msg, FieldError{"X-Change-Reason", msg})
	}
	p := principalOf(c)
	return rules.Actor{Name: p.actorName(), Reason: reason, Apps: p.apps()}, nil
}

// errNotJSONObject is the answer for a body that is not a JSON object:
// 400 for one that is not JSON at all, or that codec.CheckBody
// refuses; 422 naming the body for JSON of another type (docs/api.md: a wrong
// JSON type).
func errNotJSONObject(err error) error {
	if dup, ok := errors.AsType[*codec.DuplicateKeyError](err); ok {
		return BadRequest(dup.Error(), FieldError{dup.Path, "appears twice in one object"})
	}
	if text, ok := errors.AsType[*codec.TextError](err); ok {
		return BadRequest(text.Error())
	}
	if shape, ok := errors.AsType[*wire.NotObjectError](err); ok {
		return ValidationFailed("the body "+shape.Error(), FieldError{"body", shape.Error()})
	}
	return BadRequest("the body must be a JSON object: " + err.Error())
}

// checkJSONBody answers 400 for a body that codec.CheckBody refuses:
// text that is not UTF-8, or a key twice in one object, which it names.
// JSON it cannot read is left to the decoder that follows, which says
// what is wrong with it.
func checkJSONBody(data []byte) error {
	if err := codec.CheckBody(data); err != nil {
		return errNotJSONObject(err)
	}
	return nil
}

// timeParam reads a time query parameter, RFC 3339 or Unix milliseconds,
// as Unix milliseconds; fallback if it is absent.
func timeParam(c *fiber.Ctx, name string, fallback int64) (int64, error) {
	v := c.Query(name)
	if v == "" {
		return fallback, nil
	}
	ms, ok := parseTimeMs(v)
	if !ok {
		msg := "must be an RFC 3339 time (2026-03-02T14:05:00Z) or Unix milliseconds, from 1970 to 9999"
		return 0, BadRequest(name+" "+msg, FieldError{name, msg})
	}
	return ms, nil
}

func parseTimeMs(v string) (int64, bool) {
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return ms, ms >= 0 && ms <= maxTimeMs
	}
	// An unescaped '+' of a zone offset arrives as a space.
	t, err := time.Parse(time.RFC3339Nano, strings.ReplaceAll(v, " ", "+"))
	if err != nil {
		return 0, false
	}
	ms := t.UnixMilli()
	return ms, ms >= 0 && ms <= maxTimeMs
}

// checkRange refuses an empty or reversed range.
func checkRange(fromMs, toMs int64) error {
	if fromMs >= toMs {
		return BadRequest("from must be before to", FieldError{"from", "must be before to"})
	}
	return nil
}
