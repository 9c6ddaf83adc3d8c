package nethttp_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
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

// paramBench are guards that name the origin and params of each request,
// with rules that every request passes, so that the engine looks each
// value up.
var paramBench = []struct {
	name string
	opts []nethttp.Option
}{
	{name: "header param and origin", opts: []nethttp.Option{
		nethttp.WithOrigin(nethttp.Header("X-App")), nethttp.WithParam(nethttp.Header("X-User")),
	}},
	{name: "client ip", opts: []nethttp.Option{nethttp.WithParam(nethttp.ClientIP())}},
	{name: "client ip behind a trusted proxy", opts: []nethttp.Option{
		nethttp.WithParam(nethttp.ClientIP()), nethttp.WithTrustedProxies(netip.MustParsePrefix("192.0.2.0/24")),
	}},
}

// newParamGuard returns a guard with opts on an engine whose hotspot
// rules on the route's header:X-User and ip, and whose limitApp rule on
// the origin, every request passes.
func newParamGuard(tb testing.TB, opts ...nethttp.Option) func(http.Handler) http.Handler {
	eng := engine.New(engine.Options{})
	tb.Cleanup(eng.Close)
	const route = "GET /orders/{id}"
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
	return nethttp.Guard(eng, opts...)
}

// newParamRequest is a request from 192.0.2.1 that names its origin,
// user and the client its proxy forwards.
func newParamRequest() *http.Request {
	req := httptest.NewRequest("GET", "/orders/42", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.9, 198.51.100.7")
	req.Header.Set("X-App", "shop")
	req.Header.Set("X-User", "user-42")
	return req
}

// BenchmarkGuardParams is BenchmarkGuard's guarded handler with extractors.
func BenchmarkGuardParams(b *testing.B) {
	handler := func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("order")) }
	for _, pb := range paramBench {
		mux := http.NewServeMux()
		mux.Handle("GET /orders/{id}", newParamGuard(b, pb.opts...)(http.HandlerFunc(handler)))
		b.Run(pb.name, func(b *testing.B) {
			req := newParamRequest()
			w := &discardWriter{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				w.status = 0
				req.Pattern = ""
				mux.ServeHTTP(w, req)
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
		})
	}
}

// TestParamsAllocations: naming a request's origin and params, and the
// engine's looking them up, allocates nothing on the pass path: a guarded
// handler with extractors allocates what the bare ServeMux does.
func TestParamsAllocations(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("order")) })
	allocs := func(h http.Handler) float64 {
		req := newParamRequest()
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
	bare.Handle("GET /orders/{id}", handler)
	want := allocs(bare)
	for _, pb := range paramBench {
		mux := http.NewServeMux()
		mux.Handle("GET /orders/{id}", newParamGuard(t, pb.opts...)(handler))
		if got := allocs(mux); got != want {
			t.Errorf("%s: %v allocations per request, want the bare ServeMux's %v", pb.name, got, want)
		}
	}
}
