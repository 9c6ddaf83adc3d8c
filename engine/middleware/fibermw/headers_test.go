package fibermw_test

import (
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/engine/middleware/fibermw"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
)

// TestRateLimitHeaders runs the shared header cases through a real
// listener.
func TestRateLimitHeaders(t *testing.T) {
	for _, c := range guardtest.HeaderCases {
		t.Run(c.Name, func(t *testing.T) {
			opts := []fibermw.Option{fibermw.WithRateLimitHeaders(c.Style), fibermw.WithParam(fibermw.Query("user"))}
			if c.Details {
				opts = append(opts, fibermw.WithBlockDetails())
			}
			c.Run(t, "GET /orders/:id", func(eng *engine.Engine) string {
				app := fiber.New()
				app.Get("/orders/:id", fibermw.Guard(eng, opts...), func(c *fiber.Ctx) error {
					return c.SendString("order " + c.Params("id"))
				})
				return serveFiber(t, app)
			})
		})
	}
}

// newHeaderApp returns an app whose route is guarded with style and has a
// window rule that every request passes.
func newHeaderApp(tb testing.TB, style middleware.RateLimitHeaders) *fiber.App {
	eng := engine.New(engine.Options{})
	tb.Cleanup(eng.Close)
	if err := eng.LoadFlowRules([]engine.FlowRule{{Resource: "GET /orders/:id", Threshold: 1e12}}); err != nil {
		tb.Fatal(err)
	}
	app := fiber.New()
	app.Get("/orders/:id", fibermw.Guard(eng, fibermw.WithRateLimitHeaders(style)), func(c *fiber.Ctx) error {
		return c.SendString("order")
	})
	return app
}

// headerBench are the header styles the benchmark and the allocation test
// compare, and what each allocates on top of the bare route: its values,
// which fasthttp copies (a number under 100 costs none; the remaining
// count is over 100 here).
var headerBench = []struct {
	style       middleware.RateLimitHeaders
	extraAllocs float64
}{
	{middleware.HeadersOff, 0},
	{middleware.HeadersDraft, 2},
	{middleware.HeadersXRateLimit, 2},
}

// BenchmarkRateLimitHeaders is a guarded route's cost per request in each
// header style: off computes no status.
func BenchmarkRateLimitHeaders(b *testing.B) {
	for _, hb := range headerBench {
		serve := serveParamRequest(b, newHeaderApp(b, hb.style))
		b.Run(hb.style.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
	}
}

// TestRateLimitHeadersAllocations: with the headers off, the guard
// allocates nothing on top of the bare route; with them, their values.
func TestRateLimitHeadersAllocations(t *testing.T) {
	want := testing.AllocsPerRun(1000, serveParamRequest(t, newParamApp(t, nil)))
	for _, hb := range headerBench {
		got := testing.AllocsPerRun(1000, serveParamRequest(t, newHeaderApp(t, hb.style)))
		if got != want+hb.extraAllocs {
			t.Errorf("%s: %v allocations per request, want the bare route's %v and %v more", hb.style, got, want, hb.extraAllocs)
		}
	}
}
