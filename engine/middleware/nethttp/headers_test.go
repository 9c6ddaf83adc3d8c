package nethttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
	"github.com/sluicehq/sluice/engine/middleware/nethttp"
)

// TestRateLimitHeaders runs the shared header cases through a real
// server, with the guard in front of the ServeMux.
func TestRateLimitHeaders(t *testing.T) {
	for _, c := range guardtest.HeaderCases {
		t.Run(c.Name, func(t *testing.T) {
			opts := []nethttp.Option{nethttp.WithRateLimitHeaders(c.Style), nethttp.WithParam(nethttp.Query("user"))}
			if c.Details {
				opts = append(opts, nethttp.WithBlockDetails())
			}
			c.Run(t, "GET /orders/{id}", func(eng *engine.Engine) string {
				mux := http.NewServeMux()
				mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
					fmt.Fprint(w, "order ", r.PathValue("id"))
				})
				srv := httptest.NewServer(nethttp.Guard(eng, opts...)(mux))
				t.Cleanup(srv.Close)
				return srv.URL
			})
		})
	}
}

// headerStyles are the styles the header benchmarks compare.
var headerStyles = []middleware.RateLimitHeaders{middleware.HeadersOff, middleware.HeadersDraft, middleware.HeadersXRateLimit}

// newHeaderGuard returns a handler guarded with style, whose route has a
// window rule that every request passes.
func newHeaderGuard(tb testing.TB, style middleware.RateLimitHeaders) http.Handler {
	eng := engine.New(engine.Options{})
	tb.Cleanup(eng.Close)
	if err := eng.LoadFlowRules([]engine.FlowRule{{Resource: "GET /orders/{id}", Threshold: 1e12}}); err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /orders/{id}", nethttp.Guard(eng, nethttp.WithRateLimitHeaders(style))(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("order")) })))
	return mux
}

// BenchmarkRateLimitHeaders is a guarded handler's cost per request in
// each header style: off computes no status.
func BenchmarkRateLimitHeaders(b *testing.B) {
	for _, style := range headerStyles {
		h := newHeaderGuard(b, style)
		b.Run(style.String(), func(b *testing.B) {
			req := httptest.NewRequest("GET", "/orders/42", nil)
			w := &discardWriter{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				w.status = 0
				req.Pattern = ""
				h.ServeHTTP(w, req)
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
		})
	}
}

// TestRateLimitHeadersAllocations: with the headers off, a request
// allocates what the bare ServeMux's does; each header a style sends
// costs its value (a number under 100 none) and the header's slice of
// values: the draft's two, Envoy's three, of which the remaining count is
// over 100 here.
func TestRateLimitHeadersAllocations(t *testing.T) {
	allocs := func(h http.Handler) float64 {
		req := httptest.NewRequest("GET", "/orders/42", nil)
		w := &discardWriter{header: http.Header{}}
		return testing.AllocsPerRun(1000, func() {
			w.status = 0
			req.Pattern = ""
			h.ServeHTTP(w, req)
			if w.status != http.StatusOK {
				t.Fatalf("status %d", w.status)
			}
		})
	}
	bare := http.NewServeMux()
	bare.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("order")) })
	want := allocs(bare)
	for _, tt := range []struct {
		style middleware.RateLimitHeaders
		extra float64
	}{
		{middleware.HeadersOff, 0},
		{middleware.HeadersDraft, 4},
		{middleware.HeadersXRateLimit, 5},
	} {
		if got := allocs(newHeaderGuard(t, tt.style)); got != want+tt.extra {
			t.Errorf("%s: %v allocations per request, want the bare ServeMux's %v + %v", tt.style, got, want, tt.extra)
		}
	}
}

// BenchmarkBlocked is the default block answer's cost: the status that
// Retry-After is computed from, and the answer.
func BenchmarkBlocked(b *testing.B) {
	eng := engine.New(engine.Options{})
	b.Cleanup(eng.Close)
	if err := eng.LoadFlowRules([]engine.FlowRule{{Resource: "GET /orders/{id}", Threshold: 0}}); err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /orders/{id}", nethttp.Guard(eng)(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("order")) })))
	req := httptest.NewRequest("GET", "/orders/42", nil)
	w := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		w.status = 0
		req.Pattern = ""
		mux.ServeHTTP(w, req)
		if w.status != http.StatusTooManyRequests {
			b.Fatalf("status %d", w.status)
		}
	}
}
