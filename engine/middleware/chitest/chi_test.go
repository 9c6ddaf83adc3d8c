package chitest

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
	"github.com/sluicehq/sluice/engine/middleware/nethttp"
)

// orders registers the routes every case serves: an order by id, and a
// mounted subrouter's users.
func orders(r chi.Router) {
	r.Get("/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("order " + chi.URLParam(r, "id")))
	})
	r.Mount("/users", chi.NewRouter().Route("/", func(r chi.Router) {
		r.Get("/{name}", func(http.ResponseWriter, *http.Request) {})
	}))
}

// call sends GET path and checks the status.
func call(t *testing.T, base, path string, want int) {
	t.Helper()
	if resp, body := guardtest.Get(t, http.MethodGet, base+path); resp.StatusCode != want {
		t.Fatalf("GET %s: %d, want %d (%s)", path, resp.StatusCode, want, body)
	}
}

// TestUseWithoutPatternIsCountedAndLogged is issue #35's chi service:
// r.Use(nethttp.Guard(eng)) runs before chi routes, so the guard sees no
// pattern. The requests must not pass uncounted: they are limited under
// the unrouted resource, and the guard warns once.
func TestUseWithoutPatternIsCountedAndLogged(t *testing.T) {
	eng, _ := guardtest.NewEngine(t, engine.FlowRule{Resource: middleware.UnroutedResource, Threshold: 2})
	var logged bytes.Buffer
	r := chi.NewRouter()
	r.Use(nethttp.Guard(eng, nethttp.WithLogger(slog.New(slog.NewTextHandler(&logged, nil)))))
	orders(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)

	call(t, srv.URL, "/orders/1", http.StatusOK)
	call(t, srv.URL, "/users/ann", http.StatusOK)
	call(t, srv.URL, "/orders/2", http.StatusTooManyRequests)

	if got, want := guardtest.StatsOf(eng, middleware.UnroutedResource), (guardtest.Stats{Pass: 2, Block: 1, Complete: 2}); got != want {
		t.Errorf("%s: %+v, want %+v", middleware.UnroutedResource, got, want)
	}
	if n := strings.Count(logged.String(), "level=WARN"); n != 1 || !strings.Contains(logged.String(), "path=/orders/1") {
		t.Errorf("log = %q, want one warning about the first request", logged.String())
	}
}

// TestGuardedRoutesAreNamedByPattern: guarding chi's routes rather than
// the router (r.With, or r.Use inside r.Group) runs the guard after chi
// routed, when it has set r.Pattern and the path values, so the default
// names each route and PathValue reads its wildcard.
func TestGuardedRoutesAreNamedByPattern(t *testing.T) {
	for _, how := range []string{"with", "group"} {
		t.Run(how, func(t *testing.T) {
			eng, _ := guardtest.NewEngine(t)
			err := eng.LoadHotspotRules([]engine.HotspotRule{{Resource: "GET /orders/{id}", ParamKey: "path:id", Threshold: 1}})
			if err != nil {
				t.Fatal(err)
			}
			guard := nethttp.Guard(eng, nethttp.WithParam(nethttp.PathValue("id")))
			r := chi.NewRouter()
			if how == "with" {
				orders(r.With(guard))
			} else {
				r.Group(func(r chi.Router) {
					r.Use(guard)
					orders(r)
				})
			}
			srv := httptest.NewServer(r)
			t.Cleanup(srv.Close)

			call(t, srv.URL, "/orders/1", http.StatusOK)
			call(t, srv.URL, "/orders/1", http.StatusTooManyRequests)
			call(t, srv.URL, "/orders/2", http.StatusOK)
			call(t, srv.URL, "/users/ann", http.StatusOK)

			names := guardtest.ResourceNames(eng)
			if got, want := guardtest.StatsOf(eng, "GET /orders/{id}"), (guardtest.Stats{Pass: 2, Block: 1, Complete: 2}); got != want {
				t.Errorf("GET /orders/{id}: %+v, want %+v (resources %v)", got, want, names)
			}
			if names[middleware.UnroutedResource] {
				t.Errorf("resources %v: a routed request was counted as unrouted", names)
			}
		})
	}
}

// TestUseWithRoutePattern: at the top of the router, the guard asks chi
// for the route with WithRoutePattern, mounted subrouters included; a
// path chi has no route for is counted as unrouted.
func TestUseWithRoutePattern(t *testing.T) {
	eng, _ := guardtest.NewEngine(t, engine.FlowRule{Resource: "GET /users/{name}", Threshold: 0})
	r := chi.NewRouter()
	r.Use(nethttp.Guard(eng,
		nethttp.WithRoutePattern(func(req *http.Request) string {
			return r.Find(chi.NewRouteContext(), req.Method, req.URL.Path)
		}),
		nethttp.WithLogger(slog.New(slog.DiscardHandler)),
	))
	orders(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)

	call(t, srv.URL, "/orders/1", http.StatusOK)
	call(t, srv.URL, "/orders/2", http.StatusOK)
	call(t, srv.URL, "/users/ann", http.StatusTooManyRequests)
	call(t, srv.URL, "/nowhere", http.StatusNotFound)

	for name, want := range map[string]guardtest.Stats{
		"GET /orders/{id}":          {Pass: 2, Complete: 2},
		"GET /users/{name}":         {Block: 1},
		middleware.UnroutedResource: {Pass: 1, Complete: 1},
	} {
		if got := guardtest.StatsOf(eng, name); got != want {
			t.Errorf("%s: %+v, want %+v (resources %v)", name, got, want, guardtest.ResourceNames(eng))
		}
	}
}
