package guard

import (
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
)

// Errors recorded for calls that failed; the engine counts them, nobody
// returns them.
var (
	// ErrPanicked is recorded for a handler that panicked.
	ErrPanicked = errors.New("middleware: the handler panicked")
	// ErrServerError is recorded for a handler that answered 5xx.
	ErrServerError = errors.New("middleware: the handler answered 5xx")
)

// BlockedBody is the JSON of the default block answer, in the error
// envelope of Sluice's own API: a generic message, or one naming the rule
// when detailed.
func BlockedBody(blk *engine.BlockError, detailed bool) []byte {
	msg := middleware.TooManyRequests
	if detailed {
		msg = middleware.BlockedMessage(blk)
	}
	b := make([]byte, 0, 128)
	b = append(b, `{"error":{"code":"too_many_requests","message":`...)
	b = appendJSONString(b, msg)
	return append(b, `,"details":[]}}`...)
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// ResourceCache keeps the engine's handle of each route, so that the hot
// path does one map read and builds no name. Keys are routes, a bounded set;
// the map is copied on write.
type ResourceCache[K comparable] struct {
	eng  *engine.Engine
	read atomic.Pointer[map[K]*engine.Resource]
	mu   sync.Mutex
}

// NewResourceCache returns an empty cache of eng's resources.
func NewResourceCache[K comparable](eng *engine.Engine) *ResourceCache[K] {
	c := &ResourceCache[K]{eng: eng}
	c.read.Store(&map[K]*engine.Resource{})
	return c
}

// Get returns the resource of key, named by name on first use, and again
// once the engine evicted it. The engine's overflow resource, answered when
// it is full, is not kept, so a later request may find the route's own
// resource once there is room or a rule created it.
func (c *ResourceCache[K]) Get(key K, name func(K) string) *engine.Resource {
	if r, ok := (*c.read.Load())[key]; ok && !r.Evicted() {
		return r
	}
	n := name(key)
	r := c.eng.Resource(n)
	if r.Name() != n {
		return r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.read.Load()
	next := make(map[K]*engine.Resource, len(old)+1)
	maps.Copy(next, old)
	next[key] = r
	c.read.Store(&next)
	return r
}
