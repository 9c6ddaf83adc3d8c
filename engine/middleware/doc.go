// Package middleware is what Sluice's HTTP middleware share: the
// Retry-After and message of the answer to a blocked request, for services
// that answer blocks their own way, and the styles of the rate-limit
// headers (RateLimitHeaders). The middleware itself lives in one
// package per framework, so that a service links only its own: import
// engine/middleware/nethttp to guard a net/http handler, and
// engine/middleware/fibermw to guard Fiber routes. Neither this package nor
// nethttp depends on Fiber.
//
// Each request is an entry to a resource named after its method and route
// pattern ("GET /orders/{id}", not the raw path), so one rule covers a route
// whatever its parameters. A blocked request is answered 429 with
// Retry-After (when the rule's window has room again, see RetryAfter) and a
// message that names no rule (unless asked to); a passed
// one records its response time, and counts as an error when it answers
// 5xx or panics. A request whose route a guard cannot tell is counted
// under UnroutedResource, never let through uncounted.
//
// Both name a request's origin and params with extractors (WithOrigin,
// WithParam): the client IP, a header, a query or path parameter, a
// cookie, or a function, under the param keys hotspot rules name ("ip",
// "header:X-User", "query:key", "path:id", "cookie:session").
//
// With WithRateLimitHeaders, they tell each caller its limit, what remains
// of it and when its window has room again, in the fields of the IETF
// httpapi draft or Envoy's X-RateLimit-*. They are off by default: they
// cost every passed request a search of the rule's window, and they tell
// end users the rules' thresholds, which the block answer keeps to itself.
package middleware
