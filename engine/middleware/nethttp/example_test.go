package nethttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
	"github.com/sluicehq/sluice/engine/middleware/nethttp"
)

// A net/http service guards its whole ServeMux: each route is a resource
// named by its pattern, so one rule covers /orders/1 and /orders/2 alike.
// A blocked request is told when the rule's window has room again
// (Retry-After, in seconds rounded up).
func ExampleGuard() {
	// A clock that stands still, so that the output is exact: on the real
	// clock, the time until the window has room includes the clock's
	// slack of a few milliseconds, and this Retry-After would be 2.
	eng := engine.New(engine.Options{Clock: engine.NewManualClock(1_700_000_000_000)})
	defer eng.Close()
	err := eng.LoadFlowRules([]engine.FlowRule{
		{Name: "orders-qps", Resource: "GET /orders/{id}", Threshold: 2},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "order", r.PathValue("id"))
	})
	srv := httptest.NewServer(nethttp.Guard(eng)(mux)) // http.ListenAndServe(":8080", nethttp.Guard(eng)(mux))
	defer srv.Close()

	for _, id := range []string{"1", "2", "3"} {
		resp, err := http.Get(srv.URL + "/orders/" + id)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Printf("/orders/%s %d %q\n", id, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Output:
	// /orders/1 200 ""
	// /orders/2 200 ""
	// /orders/3 429 "1"
}

// The guard tells each caller its limit, what remains of it and when its
// window has room again, in the fields of the IETF httpapi draft.
func ExampleWithRateLimitHeaders() {
	clock := engine.NewManualClock(1_700_000_000_000)
	eng := engine.New(engine.Options{Clock: clock})
	defer eng.Close()
	err := eng.LoadFlowRules([]engine.FlowRule{
		{Name: "orders-per-minute", Resource: "GET /orders/{id}", Threshold: 2, StatIntervalMs: 60_000},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "order", r.PathValue("id"))
	})
	srv := httptest.NewServer(nethttp.Guard(eng, nethttp.WithRateLimitHeaders(middleware.HeadersDraft))(mux))
	defer srv.Close()

	for _, id := range []string{"1", "2", "3"} {
		resp, err := http.Get(srv.URL + "/orders/" + id)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Printf("%d %s %s Retry-After %q\n", resp.StatusCode,
			resp.Header.Get("RateLimit-Policy"), resp.Header.Get("RateLimit"), resp.Header.Get("Retry-After"))
		clock.Advance(15_000)
	}
	// Output:
	// 200 "default";q=2;w=60 "default";r=1;t=60 Retry-After ""
	// 200 "default";q=2;w=60 "default";r=0;t=45 Retry-After ""
	// 429 "default";q=2;w=60 "default";r=0;t=30 Retry-After "30"
}
