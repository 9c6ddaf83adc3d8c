package nethttp_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
	"github.com/sluicehq/sluice/engine/middleware/nethttp"
)

// TestGuardBeforeTheRouterFailsClosed: a guard in front of a handler
// that routes later (here http.StripPrefix, as chi's r.Use is) cannot see
// a pattern. It must not let the requests through uncounted: they are
// entries of the unrouted resource, which a rule limits, and the guard
// says so in the log once.
func TestGuardBeforeTheRouterFailsClosed(t *testing.T) {
	eng, _ := guardtest.NewEngine(t, engine.FlowRule{Resource: middleware.UnroutedResource, Threshold: 2})
	var logged bytes.Buffer
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("order " + r.PathValue("id")))
	})
	guard := nethttp.Guard(eng, nethttp.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	srv := httptest.NewServer(guard(http.StripPrefix("/api", mux)))
	t.Cleanup(srv.Close)

	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		if resp, body := guardtest.Get(t, http.MethodGet, srv.URL+"/api/orders/7"); resp.StatusCode != want {
			t.Fatalf("request %d: %d, want %d (%s)", i, resp.StatusCode, want, body)
		}
	}
	if got, want := guardtest.StatsOf(eng, middleware.UnroutedResource), (guardtest.Stats{Pass: 2, Block: 1, Complete: 2}); got != want {
		t.Errorf("%s: %+v, want %+v", middleware.UnroutedResource, got, want)
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], middleware.UnroutedResource) ||
		!strings.Contains(lines[0], "path=/api/orders/7") {
		t.Errorf("log = %q, want one warning naming %s and the first request's path", logged.String(), middleware.UnroutedResource)
	}
}

// TestGuardWithRoutePattern: a guard in front of a router names each
// request by the pattern the router's lookup tells, the same name a guard
// behind the router gives; a request the lookup finds no route for is
// counted as unrouted.
func TestGuardWithRoutePattern(t *testing.T) {
	eng, _ := guardtest.NewEngine(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(http.ResponseWriter, *http.Request) {})
	stripped := http.StripPrefix("/api", mux)
	pattern := func(r *http.Request) string {
		if !strings.HasPrefix(r.URL.Path, "/api/orders/") {
			return ""
		}
		return "/api/orders/{id}"
	}
	guard := nethttp.Guard(eng, nethttp.WithRoutePattern(pattern), nethttp.WithParam(nethttp.PathValue("id")),
		nethttp.WithLogger(slog.New(slog.DiscardHandler)))
	if err := eng.LoadHotspotRules([]engine.HotspotRule{{Resource: "GET /api/orders/{id}", ParamKey: "path:id", Threshold: 1}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(guard(stripped))
	t.Cleanup(srv.Close)

	for i, r := range []struct {
		path string
		want int
	}{{"/api/orders/1", 200}, {"/api/orders/1", 429}, {"/api/orders/2", 200}, {"/api/users/1", 404}} {
		if resp, body := guardtest.Get(t, http.MethodGet, srv.URL+r.path); resp.StatusCode != r.want {
			t.Fatalf("request %d, %s: %d, want %d (%s)", i, r.path, resp.StatusCode, r.want, body)
		}
	}
	if got, want := guardtest.StatsOf(eng, "GET /api/orders/{id}"), (guardtest.Stats{Pass: 2, Block: 1, Complete: 2}); got != want {
		t.Errorf("GET /api/orders/{id}: %+v, want %+v", got, want)
	}
	if got, want := guardtest.StatsOf(eng, middleware.UnroutedResource), (guardtest.Stats{Pass: 1, Complete: 1}); got != want {
		t.Errorf("%s: %+v, want %+v", middleware.UnroutedResource, got, want)
	}
}
