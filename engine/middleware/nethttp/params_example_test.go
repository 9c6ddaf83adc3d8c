package nethttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
	"github.com/sluicehq/sluice/engine/middleware/nethttp"
)

// serveOrders serves GET /orders/{id} behind a guard with opts, on an
// engine with rules, and returns its base URL and what stops it.
func serveOrders(rules engine.ResourceRules, opts ...nethttp.Option) (base string, stop func()) {
	eng := guardtest.ExampleEngine(rules, "GET /orders/{id}")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "order", r.PathValue("id"))
	})
	srv := httptest.NewServer(nethttp.Guard(eng, opts...)(mux))
	return srv.URL, func() { srv.Close(); eng.Close() }
}

// A hotspot rule on "header:X-User" limits each user apart; a request
// without the header is not limited.
func ExampleHeader() {
	base, stop := serveOrders(engine.ResourceRules{Hotspot: []engine.HotspotRule{
		{Name: "per-user", Resource: "GET /orders/{id}", ParamKey: "header:X-User", Threshold: 1},
	}}, nethttp.WithParam(nethttp.Header("X-User")))
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
		{Name: "no-crawler", Resource: "GET /orders/{id}", Strategy: engine.AuthorityDeny, Origins: []string{"crawler"}},
	}}, nethttp.WithOrigin(nethttp.Header("X-App")))
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
		{Name: "per-ip", Resource: "GET /orders/{id}", ParamKey: "ip", Threshold: 1},
	}},
		nethttp.WithParam(nethttp.ClientIP()),
		nethttp.WithTrustedProxies(netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")),
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
		{Name: "per-key", Resource: "GET /orders/{id}", ParamKey: "query:key", Threshold: 1},
	}}, nethttp.WithParam(nethttp.Query("key")))
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
func ExamplePathValue() {
	base, stop := serveOrders(engine.ResourceRules{Hotspot: []engine.HotspotRule{
		{Name: "per-order", Resource: "GET /orders/{id}", ParamKey: "path:id", Threshold: 2,
			SpecificItems: map[string]float64{"7": 1}},
	}}, nethttp.WithParam(nethttp.PathValue("id")))
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
	token := nethttp.Func("token", func(r *http.Request) string {
		t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return ""
		}
		return t
	})
	base, stop := serveOrders(engine.ResourceRules{Hotspot: []engine.HotspotRule{
		{Name: "per-token", Resource: "GET /orders/{id}", ParamKey: token.Key(), Threshold: 1},
	}}, nethttp.WithParam(token))
	defer stop()

	guardtest.PrintHeaderStatuses(base, "/orders/1", "Authorization", "Bearer t1", "Bearer t1", "Bearer t2")
	// Output:
	// "Bearer t1" 200
	// "Bearer t1" 429
	// "Bearer t2" 200
}
