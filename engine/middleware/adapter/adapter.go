// Package adapter exports, for the framework middlewares that live in
// nested modules of their own (ginmw, echomw), the extractors, the
// resource cache and the block answer that the middlewares of this module
// share in internal/guard: a nested module cannot import an internal
// package, and a copy would drift. Each name is an alias or a thin
// forward of internal/guard's; see there for the details. Services use a
// framework's middleware, not this package.
package adapter

import (
	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/internal/guard"
)

// Request is what the extractors read of one framework's request.
type Request = guard.Request

// Extractor reads one value of a request R under a param key.
type Extractor[R Request] = guard.Extractor[R]

// Extractors are a guard's origin, params and trusted proxies.
type Extractors[R Request] = guard.Extractors[R]

// ResourceCache keeps the engine's handle of each route.
type ResourceCache[K comparable] = guard.ResourceCache[K]

// MaxStackOptions is how many entry options a request's call keeps on the
// stack.
const MaxStackOptions = guard.MaxStackOptions

// Limits is what a guard tells callers of their limits: its rate-limit
// headers' style, and whether they may name the rule.
type Limits = guard.Limits

// MaxHeaders is how many header fields a guard sets on an answer.
const MaxHeaders = guard.MaxHeaders

// Errors recorded for calls that failed.
var (
	// ErrPanicked is recorded for a handler that panicked.
	ErrPanicked = guard.ErrPanicked
	// ErrServerError is recorded for a handler that answered 5xx.
	ErrServerError = guard.ErrServerError
)

// NewResourceCache returns an empty cache of eng's resources.
func NewResourceCache[K comparable](eng *engine.Engine) *ResourceCache[K] {
	return guard.NewResourceCache[K](eng)
}

// BlockedBody is the JSON of the default block answer.
func BlockedBody(blk *engine.BlockError, detailed bool) []byte {
	return guard.BlockedBody(blk, detailed)
}

// ClientIP reads the client's IP address, param key "ip".
func ClientIP[R Request]() Extractor[R] { return guard.ClientIP[R]() }

// Header reads a header, param key "header:<name>"; lookup is the name
// the framework's Request finds it by.
func Header[R Request](name, lookup string) Extractor[R] { return guard.Header[R](name, lookup) }

// Query reads a query parameter, param key "query:<name>".
func Query[R Request](name string) Extractor[R] { return guard.Query[R](name) }

// PathParam reads a path parameter of the route, param key "path:<name>".
func PathParam[R Request](name string) Extractor[R] { return guard.PathParam[R](name) }

// Cookie reads a cookie, param key "cookie:<name>".
func Cookie[R Request](name string) Extractor[R] { return guard.Cookie[R](name) }

// Func reads what fn returns, under key.
func Func[R Request](key string, fn func(R) string) Extractor[R] { return guard.Func(key, fn) }
