// Package nethttp puts the Sluice engine in front of net/http handlers:
// Guard wraps a ServeMux, or the handlers registered on one. It depends on
// the standard library and the engine only, so a net/http service links no
// other framework; Fiber services import engine/middleware/fibermw instead.
//
// Each request is an entry to a resource named after its method and
// ServeMux pattern ("GET /orders/{id}", not the raw path), so one rule
// covers a route whatever its parameters. A blocked request is answered 429
// with Retry-After; a passed one records its response time, and counts as
// an error when it answers 5xx or panics. A guard that cannot tell a
// request's route never lets it through uncounted: it counts it under
// middleware.UnroutedResource and logs once (see WithRoutePattern).
//
// WithOrigin and WithParam name a request's origin, which authority rules
// and limitApp flow rules read, and its params, which hotspot rules limit
// per value: ClientIP (param key "ip"), Header ("header:X-User"), Query
// ("query:key"), PathValue ("path:id"), Cookie ("cookie:session") or
// Func (a key of your choosing). An empty value is absent: a hotspot rule
// does not limit a request that lacks its param. ClientIP is the
// connection's peer; X-Forwarded-For is read only from the proxies given
// with WithTrustedProxies. Extractors allocate nothing, but to decode an
// escaped query or path value, and Cookie, which net/http parses.
package nethttp
