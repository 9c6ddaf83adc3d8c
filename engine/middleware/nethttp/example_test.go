package nethttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/nethttp"
)

// A net/http service guards its whole ServeMux: each route is a resource
// named by its pattern, so one rule covers /orders/1 and /orders/2 alike.
func ExampleGuard() {
	eng := engine.New(engine.Options{})
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
