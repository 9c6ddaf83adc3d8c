// Package middleware puts the Sluice engine in front of HTTP handlers: HTTP
// wraps a net/http handler, Fiber guards Fiber routes. Each request is an
// entry to a resource named after its method and route pattern
// ("GET /orders/{id}", not the raw path), so one rule covers a route
// whatever its parameters. A blocked request is answered 429 with
// Retry-After; a passed one records its response time, and counts as an
// error when it answers 5xx or panics.
package middleware
