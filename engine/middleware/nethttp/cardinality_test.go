package nethttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
	"github.com/sluicehq/sluice/engine/middleware/nethttp"
)

// TestHTTPRouteHandles: the guard keeps each route's handle, but not the
// engine's overflow resource, answered while the engine is full, nor a
// handle the engine evicted: the route gets its own resource once there is
// room, and rules loaded after an eviction apply.
func TestGuardRouteHandles(t *testing.T) {
	clock := engine.NewManualClock(0)
	eng := engine.New(engine.Options{Clock: clock, MaxResources: 1, ResourceIdleTTL: time.Minute})
	t.Cleanup(eng.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /users/{id}", func(http.ResponseWriter, *http.Request) {})
	srv := httptest.NewServer(nethttp.Guard(eng)(mux))
	t.Cleanup(srv.Close)
	call := func(path string, wantStatus int) {
		t.Helper()
		if resp, body := guardtest.Get(t, http.MethodGet, srv.URL+path); resp.StatusCode != wantStatus {
			t.Fatalf("GET %s: %d, want %d (%s)", path, resp.StatusCode, wantStatus, body)
		}
	}

	call("/orders/1", http.StatusOK)
	call("/users/1", http.StatusOK) // full: counted under (overflow)
	if got := guardtest.StatsOf(eng, engine.OverflowResource); got.Pass != 1 {
		t.Fatalf("overflow %+v, want the users call", got)
	}
	clock.Set(3 * 60_000)
	call("/users/2", http.StatusOK)
	if n := eng.EvictIdle(); n != 1 {
		t.Fatalf("EvictIdle() = %d, want orders gone", n)
	}
	call("/users/3", http.StatusOK)
	if got := guardtest.StatsOf(eng, "GET /users/{id}"); got.Pass != 1 {
		t.Fatalf("users %+v once there is room, want its own resource", got)
	}

	if err := eng.LoadFlowRules([]engine.FlowRule{{Resource: "GET /orders/{id}", Threshold: 0}}); err != nil {
		t.Fatal(err)
	}
	call("/orders/2", http.StatusTooManyRequests)
}
