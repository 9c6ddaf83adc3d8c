package fibermw_test

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/fibermw"
)

// benchRules are the rules the guarded benchmarks run with: none, or one
// QPS rule that every request passes, so that the engine does its work.
var benchRules = []struct {
	name  string
	rules []engine.FlowRule
}{
	{name: "no rule"},
	{name: "passing rule", rules: []engine.FlowRule{
		{Resource: "GET /orders/:id", Threshold: 1e12},
	}},
}

// BenchmarkGuard compares a Fiber route with and without the guard, through
// the app's fasthttp handler.
func BenchmarkGuard(b *testing.B) {
	handler := func(c *fiber.Ctx) error { return c.SendString("order") }
	run := func(b *testing.B, app *fiber.App) {
		h := app.Handler()
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("GET")
		ctx.Request.SetRequestURI("/orders/42")
		b.ReportAllocs()
		for b.Loop() {
			h(&ctx)
			if ctx.Response.StatusCode() != http.StatusOK {
				b.Fatalf("status %d", ctx.Response.StatusCode())
			}
			ctx.Response.Reset()
		}
	}
	bare := fiber.New()
	bare.Get("/orders/:id", handler)
	b.Run("bare", func(b *testing.B) { run(b, bare) })
	for _, br := range benchRules {
		eng := engine.New(engine.Options{})
		b.Cleanup(eng.Close)
		if err := eng.LoadFlowRules(br.rules); err != nil {
			b.Fatal(err)
		}
		app := fiber.New()
		app.Get("/orders/:id", fibermw.Guard(eng), handler)
		b.Run("guarded/"+br.name, func(b *testing.B) { run(b, app) })
	}
}

// paramBench are guards that name the origin and params of each request,
// with rules that every request passes, so that the engine looks each
// value up; extraAllocs is what each allocates on top of the bare route.
var paramBench = []struct {
	name        string
	opts        []fibermw.Option
	extraAllocs float64
}{
	{name: "header param and origin", opts: []fibermw.Option{
		fibermw.WithOrigin(fibermw.Header("X-App")), fibermw.WithParam(fibermw.Header("X-User")),
	}},
	// fasthttp keeps the peer's address as a net.IP: its text is made
	// for each request.
	{name: "client ip", opts: []fibermw.Option{fibermw.WithParam(fibermw.ClientIP())}, extraAllocs: 1},
	// The client's address is text of the header already. The request
	// has no connection: its peer is 0.0.0.0.
	{name: "client ip behind a trusted proxy", opts: []fibermw.Option{
		fibermw.WithParam(fibermw.ClientIP()), fibermw.WithTrustedProxies(netip.MustParsePrefix("0.0.0.0/32")),
	}},
}

// newParamApp returns an app whose route is guarded with opts on an
// engine whose hotspot rules on the route's header:X-User and ip, and
// whose limitApp rule on the origin, every request passes; nil opts leave
// the route bare.
func newParamApp(tb testing.TB, opts []fibermw.Option) *fiber.App {
	handler := func(c *fiber.Ctx) error { return c.SendString("order") }
	app := fiber.New()
	if opts == nil {
		app.Get("/orders/:id", handler)
		return app
	}
	eng := engine.New(engine.Options{})
	tb.Cleanup(eng.Close)
	const route = "GET /orders/:id"
	if err := eng.LoadFlowRules([]engine.FlowRule{{Resource: route, LimitApp: "shop", Threshold: 1e12}}); err != nil {
		tb.Fatal(err)
	}
	err := eng.LoadHotspotRules([]engine.HotspotRule{
		{Resource: route, ParamKey: "header:X-User", Threshold: 1e12},
		{Resource: route, ParamKey: "ip", Threshold: 1e12},
	})
	if err != nil {
		tb.Fatal(err)
	}
	app.Get("/orders/:id", fibermw.Guard(eng, opts...), handler)
	return app
}

// serveParamRequest returns a function that serves app a request that
// names its origin, user and the client its proxy forwards.
func serveParamRequest(tb testing.TB, app *fiber.App) func() {
	h := app.Handler()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI("/orders/42")
	ctx.Request.Header.Set("X-App", "shop")
	ctx.Request.Header.Set("X-User", "user-42")
	ctx.Request.Header.Set("X-Forwarded-For", "203.0.113.9, 198.51.100.7")
	return func() {
		h(&ctx)
		if ctx.Response.StatusCode() != http.StatusOK {
			tb.Fatalf("status %d", ctx.Response.StatusCode())
		}
		ctx.Response.Reset()
	}
}

// BenchmarkGuardParams is BenchmarkGuard's guarded route with extractors.
func BenchmarkGuardParams(b *testing.B) {
	for _, pb := range paramBench {
		serve := serveParamRequest(b, newParamApp(b, pb.opts))
		b.Run(pb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
	}
}

// TestParamsAllocations: naming a request's origin and params, and the
// engine's looking them up, allocates nothing on the pass path but the
// text of the client IP.
func TestParamsAllocations(t *testing.T) {
	want := testing.AllocsPerRun(1000, serveParamRequest(t, newParamApp(t, nil)))
	for _, pb := range paramBench {
		got := testing.AllocsPerRun(1000, serveParamRequest(t, newParamApp(t, pb.opts)))
		if got != want+pb.extraAllocs {
			t.Errorf("%s: %v allocations per request, want the bare route's %v and %v more", pb.name, got, want, pb.extraAllocs)
		}
	}
}
