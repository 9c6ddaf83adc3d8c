// Package fibermw puts the Sluice engine in front of Fiber routes: Guard is
// a handler to put first among a route's handlers, and Router guards every
// route registered through it. It is named fibermw, not fiber, so that a
// file imports it beside github.com/gofiber/fiber/v2 without renaming
// either. A net/http service imports engine/middleware/nethttp instead and
// links no Fiber.
//
// Each request is an entry to a resource named after its method and
// route's pattern ("GET /orders/:id", not the raw path), so one rule covers
// a route whatever its parameters. A blocked request is answered 429 with
// Retry-After; a passed one records its response time, and counts as an
// error when it answers 5xx, returns an error the app's error handler turns
// into one, or panics.
//
// WithOrigin and WithParam name a request's origin, which authority rules
// and limitApp flow rules read, and its params, which hotspot rules limit
// per value: ClientIP (param key "ip"), Header ("header:X-User"), Query
// ("query:key"), Param ("path:id"), Cookie ("cookie:session") or Func (a
// key of your choosing). An empty value is absent: a hotspot rule does not limit a request that
// lacks its param. ClientIP is the connection's peer; X-Forwarded-For is
// read only from the proxies given with WithTrustedProxies, not from
// Fiber's own ProxyHeader setting. Extractors allocate nothing but
// ClientIP's text of the peer's address; the values go to the engine
// without a copy, since it copies those it keeps.
package fibermw
