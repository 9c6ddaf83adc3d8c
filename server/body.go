package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/valyala/fasthttp"
)

// Request body bounds (docs/api.md, "Bodies"). The server streams bodies
// (fiber.Config.StreamRequestBody) and reads each itself, so it never
// holds more of one than the route it reaches allows.
const (
	// maxBodyBytes is the largest body of every route but the rule file
	// routes.
	maxBodyBytes = 1 << 20
	// maxRuleFileBytes is the largest body of apply and import, so that
	// an export of 100,000 rules applies back. Only a caller the route
	// authorises gets to send that much.
	maxRuleFileBytes = 64 << 20
	// drainBodyBytes is how much of a refused body is read and thrown
	// away so that the client, still sending, sees the answer rather
	// than a reset; past it the connection is closed instead.
	drainBodyBytes = 8 << 20
)

// ruleFileRoutes are the routes ("POST /api/v1/rules/apply") that read
// their body themselves, up to maxRuleFileBytes, after their access check
// (apiRoutes.postRuleFile). limitBody matches them on the exact path, as
// the router does: another spelling reaches no route, and its body is
// bounded at maxBodyBytes like any other.
type ruleFileRoutes map[string]bool

// limitBody reads every request's body before routing, at most
// maxBodyBytes of it, except on the rule file routes: there the route
// reads it once the caller is known to be allowed (readBody), so that an
// unauthenticated or unauthorised request never makes the server hold
// more than maxBodyBytes. Compressed bodies are refused: a 1 MiB gzip
// body can inflate to gigabytes.
func (s *Server) limitBody(c *fiber.Ctx) error {
	if err := refuseEncoded(c); err != nil {
		return err
	}
	if !s.ruleFileRoutes[c.Method()+" "+c.Path()] {
		if err := readBodyUpTo(c, maxBodyBytes); err != nil {
			return err
		}
		return c.Next()
	}
	err := c.Next()
	// Refused before the route read it (401, 403, 429, 404).
	discardBody(c)
	return err
}

// refuseEncoded answers 415 to a body with a Content-Encoding other than
// identity, and throws the body away.
func refuseEncoded(c *fiber.Ctx) error {
	// Read in place: c.Get copies under Immutable, and the value is only
	// compared.
	enc := c.Request().Header.Peek(fiber.HeaderContentEncoding)
	if len(enc) == 0 || strings.EqualFold(utils.UnsafeString(enc), "identity") {
		return nil
	}
	discardBody(c)
	return NewError(http.StatusUnsupportedMediaType, "compressed request bodies are not accepted: send the body without Content-Encoding")
}

// readBody returns a handler that reads the request's body, at most
// limit bytes of it (413 beyond), for the handlers after it.
func readBody(limit int) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := readBodyUpTo(c, limit); err != nil {
			return err
		}
		return c.Next()
	}
}

// readBodyUpTo reads the body stream into the request's body, less a
// leading byte order mark, or answers 413 if it is over limit. A body
// already read is left as it is but for that mark.
func readBodyUpTo(c *fiber.Ctx, limit int) error {
	req := c.Request()
	stream := req.BodyStream()
	if stream == nil {
		if len(req.Body()) > limit {
			return errBodyTooLarge(limit)
		}
		dropBOM(req)
		return nil
	}
	size := req.Header.ContentLength()
	if size > limit {
		discardBody(c)
		return errBodyTooLarge(limit)
	}
	if size >= 0 && size <= smallBodyBytes {
		return readSmallBody(c, size)
	}
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(size)
	}
	n, err := buf.ReadFrom(io.LimitReader(stream, int64(limit)+1))
	if err != nil {
		c.Context().SetConnectionClose()
		return BadRequest("the body could not be read: " + err.Error())
	}
	if n > int64(limit) {
		discardBody(c)
		return errBodyTooLarge(limit)
	}
	req.SetBodyRaw(buf.Bytes())
	dropBOM(req)
	return nil
}

// smallBodyBytes is the largest body readBodyUpTo reads through a pooled
// buffer rather than one of its own: a check's body, or a batch of a
// hundred checks.
const smallBodyBytes = 16 << 10

// smallBodies are the buffers of readSmallBody, each smallBodyBytes long.
var smallBodies = sync.Pool{New: func() any { return new([smallBodyBytes]byte) }}

// readSmallBody reads a body of a known size of at most smallBodyBytes
// without an allocation: through a pooled buffer into the request's own
// (pooled) body buffer, which fasthttp has already filled with what it read
// ahead; it closes the stream.
func readSmallBody(c *fiber.Ctx, size int) error {
	req := c.Request()
	buf := smallBodies.Get().(*[smallBodyBytes]byte)
	defer smallBodies.Put(buf)
	if _, err := io.ReadFull(req.BodyStream(), buf[:size]); err != nil {
		c.Context().SetConnectionClose()
		return BadRequest("the body could not be read: " + err.Error())
	}
	req.SetBody(buf[:size])
	dropBOM(req)
	return nil
}

// utf8BOM is the UTF-8 encoding of U+FEFF, the byte order mark.
var utf8BOM = []byte("\xef\xbb\xbf")

// dropBOM removes a byte order mark that begins the body: RFC 8259 lets a
// JSON parser ignore one (and YAML allows one), so a body saved by an
// editor that writes one decodes as the same body without it.
func dropBOM(req *fasthttp.Request) {
	if body := req.Body(); bytes.HasPrefix(body, utf8BOM) {
		// A copy: the body may live in a buffer that setting a new one
		// gives back to fasthttp's pool.
		req.SetBodyRaw(bytes.Clone(body[len(utf8BOM):]))
	}
}

// discardBody throws away what is left of the body stream, up to
// drainBodyBytes; a longer body closes the connection after the answer,
// since its rest would be read as the next request.
func discardBody(c *fiber.Ctx) {
	req := c.Request()
	stream := req.BodyStream()
	if stream == nil {
		return
	}
	if req.Header.ContentLength() > drainBodyBytes {
		c.Context().SetConnectionClose()
		req.ResetBody()
		return
	}
	n, err := io.CopyN(io.Discard, stream, drainBodyBytes+1)
	if n > drainBodyBytes || err != nil && !errors.Is(err, io.EOF) {
		c.Context().SetConnectionClose()
	}
	req.ResetBody()
}

func errBodyTooLarge(limit int) error {
	return NewError(http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over the %d MiB this route takes", limit>>20))
}
