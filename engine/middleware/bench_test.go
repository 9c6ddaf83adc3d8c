package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
)

// benchRules are the rules the guarded benchmarks run with: none, or one
// QPS rule that every request passes, so that the engine does its work.
var benchRules = []struct {
	name  string
	rules []engine.FlowRule
}{
	{name: "no rule"},
	{name: "passing rule", rules: []engine.FlowRule{
		{Resource: "GET /orders/{id}", Threshold: 1e12},
		{Resource: "GET /orders/:id", Threshold: 1e12},
	}},
}

// BenchmarkHTTP compares a ServeMux with and without the middleware; the
// difference is the middleware's cost per request.
func BenchmarkHTTP(b *testing.B) {
	handler := func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("order")) }
	bare := http.NewServeMux()
	bare.HandleFunc("GET /orders/{id}", handler)
	run := func(b *testing.B, h http.Handler) {
		req := httptest.NewRequest("GET", "/orders/42", nil)
		w := &discardWriter{header: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			w.status = 0
			req.Pattern = "" // the mux sets it; a new request has none
			h.ServeHTTP(w, req)
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, bare) })
	for _, br := range benchRules {
		eng := engine.New(engine.Options{})
		b.Cleanup(eng.Close)
		if err := eng.LoadFlowRules(br.rules); err != nil {
			b.Fatal(err)
		}
		guard := middleware.HTTP(eng)
		b.Run("guarded mux/"+br.name, func(b *testing.B) { run(b, guard(bare)) })
		perRoute := http.NewServeMux()
		perRoute.Handle("GET /orders/{id}", guard(http.HandlerFunc(handler)))
		b.Run("guarded handler/"+br.name, func(b *testing.B) { run(b, perRoute) })
	}
}

// discardWriter is a ResponseWriter that keeps nothing but the status, so
// that the benchmarks measure the handlers, not a recorder.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *discardWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}

// BenchmarkFiber compares a Fiber route with and without the guard, through
// the app's fasthttp handler.
func BenchmarkFiber(b *testing.B) {
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
		app.Get("/orders/:id", middleware.Fiber(eng), handler)
		b.Run("guarded/"+br.name, func(b *testing.B) { run(b, app) })
	}
}
