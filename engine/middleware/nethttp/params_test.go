package nethttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
	"github.com/sluicehq/sluice/engine/middleware/nethttp"
)

// extractor is the net/http extractor of a shared case's source.
func extractor(t *testing.T, s guardtest.Source) nethttp.Extractor {
	switch s.Kind {
	case "ip":
		return nethttp.ClientIP()
	case "header":
		return nethttp.Header(s.Name)
	case "query":
		return nethttp.Query(s.Name)
	case "path":
		return nethttp.PathValue(s.Name)
	case "func":
		return nethttp.Func("tenant", func(r *http.Request) string {
			return strings.ToLower(r.Header.Get("X-Tenant"))
		})
	}
	t.Fatalf("no extractor %q", s.Kind)
	return nethttp.Extractor{}
}

// TestParams runs the shared extractor cases through a real server, with
// the guard in front of the ServeMux and in front of the route's handler.
func TestParams(t *testing.T) {
	for _, c := range guardtest.ParamCases {
		// The answers name the rule that blocked, which the cases check.
		opts := []nethttp.Option{nethttp.WithBlockDetails()}
		if c.Origin != nil {
			opts = append(opts, nethttp.WithOrigin(extractor(t, *c.Origin)))
		}
		for _, s := range c.Params {
			opts = append(opts, nethttp.WithParam(extractor(t, s)))
		}
		if c.Proxies != nil {
			opts = append(opts, nethttp.WithTrustedProxies(c.Proxies...))
		}
		for _, wrap := range []string{"mux", "handler"} {
			t.Run(c.Name+"/"+wrap, func(t *testing.T) {
				c.Run(t, "GET /orders/{id}", func(eng *engine.Engine) string {
					guard := nethttp.Guard(eng, opts...)
					handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						fmt.Fprint(w, "order ", r.PathValue("id"))
					})
					mux := http.NewServeMux()
					var h http.Handler = mux
					if wrap == "mux" {
						mux.Handle("GET /orders/{id}", handler)
						h = guard(mux)
					} else {
						mux.Handle("GET /orders/{id}", guard(handler))
					}
					srv := httptest.NewServer(h)
					t.Cleanup(srv.Close)
					return srv.URL
				})
			})
		}
	}
}

// TestExtractorKeys: the param keys follow API.md's naming, which hotspot
// rules name.
func TestExtractorKeys(t *testing.T) {
	tests := []struct {
		x    nethttp.Extractor
		want string
	}{
		{nethttp.ClientIP(), "ip"},
		{nethttp.Header("X-User"), "header:X-User"},
		{nethttp.Header("x-user"), "header:x-user"},
		{nethttp.Query("key"), "query:key"},
		{nethttp.PathValue("id"), "path:id"},
		{nethttp.Func("tenant", func(*http.Request) string { return "" }), "tenant"},
	}
	for _, tt := range tests {
		if got := tt.x.Key(); got != tt.want {
			t.Errorf("Key() = %q, want %q", got, tt.want)
		}
	}
}
