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

// kit is what the shared extractor cases build net/http guards of.
var kit = guardtest.Kit[nethttp.Extractor, nethttp.Option]{
	ClientIP: nethttp.ClientIP,
	Header:   nethttp.Header,
	Query:    nethttp.Query,
	Path:     nethttp.PathValue,
	Cookie:   nethttp.Cookie,
	Tenant: nethttp.Func("tenant", func(r *http.Request) string {
		return strings.ToLower(r.Header.Get("X-Tenant"))
	}),
	WithOrigin:         nethttp.WithOrigin,
	WithParam:          nethttp.WithParam,
	WithTrustedProxies: nethttp.WithTrustedProxies,
}

// TestParams runs the shared extractor cases through a real server, with
// the guard in front of the ServeMux and in front of the route's handler.
func TestParams(t *testing.T) {
	for _, c := range guardtest.ParamCases {
		for _, wrap := range []string{"mux", "handler"} {
			t.Run(c.Name+"/"+wrap, func(t *testing.T) {
				// The answers name the rule that blocked, which the cases check.
				opts := append(kit.Options(t, c), nethttp.WithBlockDetails())
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

// TestExtractorKeys: the param keys follow docs/api.md's naming, which hotspot
// rules name.
func TestExtractorKeys(t *testing.T) { kit.CheckKeys(t) }
