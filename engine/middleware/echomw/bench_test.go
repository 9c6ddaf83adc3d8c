package echomw_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/echomw"
)

// BenchmarkGuard compares an echo with and without the guard; the
// difference is the guard's cost per request.
func BenchmarkGuard(b *testing.B) {
	newEngine := func(mw ...echo.MiddlewareFunc) *echo.Echo {
		r := echo.New()
		r.Use(mw...)
		r.GET("/orders/:id", func(c echo.Context) error { return c.String(http.StatusOK, "order") })
		return r
	}
	run := func(b *testing.B, h http.Handler) {
		req := httptest.NewRequest(http.MethodGet, "/orders/42", nil)
		w := &discardWriter{header: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			w.status = 0
			h.ServeHTTP(w, req)
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, newEngine()) })
	for _, br := range []struct {
		name  string
		rules []engine.FlowRule
	}{
		{name: "no rule"},
		{name: "passing rule", rules: []engine.FlowRule{{Resource: "GET /orders/:id", Threshold: 1e12}}},
	} {
		eng := engine.New(engine.Options{})
		b.Cleanup(eng.Close)
		if err := eng.LoadFlowRules(br.rules); err != nil {
			b.Fatal(err)
		}
		b.Run("guarded/"+br.name, func(b *testing.B) { run(b, newEngine(echomw.Guard(eng))) })
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
