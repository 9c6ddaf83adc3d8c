package fibermw_test

import (
	"net/http"
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
