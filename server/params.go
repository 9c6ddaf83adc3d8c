package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/store"
)

// Page size bounds of every list (API.md).
const (
	defaultPageSize = 50
	maxPageSize     = 500
	maxReasonLen    = 1024
)

// pageParams reads ?page=&pageSize=.
func pageParams(c *fiber.Ctx) (store.Page, error) {
	page := store.Page{Number: 1, Size: defaultPageSize}
	if v := c.Query("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return page, BadRequest("page must be a whole number >= 1", FieldError{"page", "must be a whole number >= 1"})
		}
		page.Number = n
	}
	if v := c.Query("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			msg := fmt.Sprintf("must be a whole number from 1 to %d", maxPageSize)
			return page, BadRequest("pageSize "+msg, FieldError{"pageSize", msg})
		}
		page.Size = n
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

// idParam reads a positive integer path parameter.
func idParam(c *fiber.Ctx, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id < 1 {
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

// check returns store.ErrStale, wrapped with a message, unless the header
// is absent or names version.
func (m ifMatch) check(what string, version int64) error {
	if !m.present || m.any {
		return nil
	}
	current := strconv.FormatInt(version, 10)
	for _, v := range m.versions {
		if v == current {
			return nil
		}
	}
	return fmt.Errorf("%s is at version %d, not the one If-Match names: %w", what, version, store.ErrStale)
}

// setETag sets the ETag of a resource at version.
func setETag(c *fiber.Ctx, version int64) {
	c.Set(fiber.HeaderETag, `"`+strconv.FormatInt(version, 10)+`"`)
}

// changeActor is who makes a write and why (X-Change-Reason).
func changeActor(c *fiber.Ctx) (actor, error) {
	reason := c.Get("X-Change-Reason")
	if utf8.RuneCountInString(reason) > maxReasonLen || !utf8.ValidString(reason) {
		msg := fmt.Sprintf("must be valid UTF-8 of at most %d characters", maxReasonLen)
		return actor{}, BadRequest("X-Change-Reason "+msg, FieldError{"X-Change-Reason", msg})
	}
	return actor{name: principalOf(c).actorName(), reason: reason}, nil
}

// errNotJSONObject is the 400 for a body that is not a JSON object.
func errNotJSONObject(err error) error {
	if apiErr, ok := errors.AsType[*Error](err); ok {
		return apiErr
	}
	return BadRequest("the body must be a JSON object: " + err.Error())
}
