package fibermw_test

import (
	"net"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/fibermw"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
)

// serveOrders serves GET /orders/:id behind a guard with opts, on an
// engine with rules, and returns its base URL and what stops it.
func serveOrders(rules engine.ResourceRules, opts ...fibermw.Option) (base string, stop func()) {
	eng := guardtest.ExampleEngine(rules, "GET /orders/:id")
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/orders/:id", fibermw.Guard(eng, opts...), func(c *fiber.Ctx) error {
		return c.SendString("order " + c.Params("id"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() { _ = app.Listener(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = app.Shutdown(); eng.Close() }
}

// A hotspot rule on "header:X-User" limits each user apart; a request
// without the header is not limited.
func ExampleHeader() {
	base, stop := serveOrders(engine.ResourceRules{Hotspot: []engine.HotspotRule{
		{Name: "per-user", Resource: "GET /orders/:id", ParamKey: "header:X-User", Threshold: 1},
	}}, fibermw.WithParam(fibermw.Header("X-User")))
	defer stop()

	guardtest.PrintHeaderStatuses(base, "/orders/1", "X-User", "alice", "alice", "bob", "", "")
	// Output:
	// "alice" 200
	// "alice" 429
	// "bob" 200
	// "" 200
	// "" 200
}

// The origin of a request, here its X-App header, is what authority rules
// allow or deny.
func ExampleWithOrigin() {
	base, stop := serveOrders(engine.ResourceRules{Authority: []engine.AuthorityRule{
		{Name: "no-crawler", Resource: "GET /orders/:id", Strategy: engine.AuthorityDeny, Origins: []string{"crawler"}},
	}}, fibermw.WithOrigin(fibermw.Header("X-App")))
	defer stop()

	guardtest.PrintHeaderStatuses(base, "/orders/1", "X-App", "shop", "crawler")
	// Output:
	// "shop" 200
	// "crawler" 429
}

// Behind a proxy, the client IP is read from X-Forwarded-For, which is
// believed only from the trusted proxies: here the loopback the example's
// requests come from.
func ExampleClientIP() {
	base, stop := serveOrders(engine.ResourceRules{Hotspot: []engine.HotspotRule{
		{Name: "per-ip", Resource: "GET /orders/:id", ParamKey: "ip", Threshold: 1},
	}},
		fibermw.WithParam(fibermw.ClientIP()),
		fibermw.WithTrustedProxies(netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")),
	)
	defer stop()

	guardtest.PrintHeaderStatuses(base, "/orders/1", "X-Forwarded-For", "198.51.100.1", "198.51.100.1", "198.51.100.2")
	// Output:
	// "198.51.100.1" 200
	// "198.51.100.1" 429
	// "198.51.100.2" 200
}

// A hotspot rule on "query:key" limits each API key apart.
func ExampleQuery() {
	base, stop := serveOrders(engine.ResourceRules{Hotspot: []engine.HotspotRule{
		{Name: "per-key", Resource: "GET /orders/:id", ParamKey: "query:key", Threshold: 1},
	}}, fibermw.WithParam(fibermw.Query("key")))
	defer stop()

	guardtest.PrintPathStatuses(base, "/orders/1?key=k1", "/orders/2?key=k1", "/orders/3?key=k2", "/orders/4")
	// Output:
	// /orders/1?key=k1 200
	// /orders/2?key=k1 429
	// /orders/3?key=k2 200
	// /orders/4 200
}

// A hotspot rule on "path:id" limits each order apart, and gives a hot
// one a lower threshold.
func ExampleParam() {
	base, stop := serveOrders(engine.ResourceRules{Hotspot: []engine.HotspotRule{
		{Name: "per-order", Resource: "GET /orders/:id", ParamKey: "path:id", Threshold: 2,
			SpecificItems: map[string]float64{"7": 1}},
	}}, fibermw.WithParam(fibermw.Param("id")))
	defer stop()

	guardtest.PrintPathStatuses(base, "/orders/1", "/orders/1", "/orders/7", "/orders/7")
	// Output:
	// /orders/1 200
	// /orders/1 200
	// /orders/7 200
	// /orders/7 429
}

// A function names any value, under a key of the caller's choosing: here
// the bearer token, for a hotspot rule on "token".
func ExampleFunc() {
	token := fibermw.Func("token", func(c *fiber.Ctx) string {
		t, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
		if !ok {
			return ""
		}
		return t
	})
	base, stop := serveOrders(engine.ResourceRules{Hotspot: []engine.HotspotRule{
		{Name: "per-token", Resource: "GET /orders/:id", ParamKey: token.Key(), Threshold: 1},
	}}, fibermw.WithParam(token))
	defer stop()

	guardtest.PrintHeaderStatuses(base, "/orders/1", "Authorization", "Bearer t1", "Bearer t1", "Bearer t2")
	// Output:
	// "Bearer t1" 200
	// "Bearer t1" 429
	// "Bearer t2" 200
}
