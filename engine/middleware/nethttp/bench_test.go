package nethttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/nethttp"
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
	}},
}

// BenchmarkGuard compares a ServeMux with and without the middleware; the
// difference is the middleware's cost per request.
func BenchmarkGuard(b *testing.B) {
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
		guard := nethttp.Guard(eng)
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
