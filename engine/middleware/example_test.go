package middleware_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
)

// A net/http service guards its whole ServeMux: each route is a resource
// named by its pattern, so one rule covers /orders/1 and /orders/2 alike.
func ExampleHTTP() {
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
	srv := httptest.NewServer(middleware.HTTP(eng)(mux)) // http.ListenAndServe(":8080", middleware.HTTP(eng)(mux))
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

// A Fiber service guards a route by putting the guard first among its
// handlers.
func ExampleFiber() {
	eng := engine.New(engine.Options{})
	defer eng.Close()
	err := eng.LoadFlowRules([]engine.FlowRule{
		{Name: "orders-qps", Resource: "GET /orders/:id", Threshold: 1},
	})
	if err != nil {
		panic(err)
	}
	app := fiber.New()
	app.Get("/orders/:id", middleware.Fiber(eng), func(c *fiber.Ctx) error {
		return c.SendString("order " + c.Params("id"))
	})

	for _, id := range []string{"1", "2"} {
		resp, err := app.Test(httptest.NewRequest("GET", "/orders/"+id, nil))
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println("/orders/"+id, resp.StatusCode)
	}
	// Output:
	// /orders/1 200
	// /orders/2 429
}

// FiberRouter guards every route registered through it, each under its own
// pattern; routes registered on the app directly, like a health check, stay
// unguarded.
func ExampleFiberRouter() {
	eng := engine.New(engine.Options{})
	defer eng.Close()
	app := fiber.New()
	app.Get("/health", func(c *fiber.Ctx) error { return c.SendString("ok") })
	api := middleware.FiberRouter(app.Group("/api"), middleware.Fiber(eng))
	api.Get("/orders/:id", func(c *fiber.Ctx) error { return c.SendString("order") })
	api.Post("/orders", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusCreated) })

	for _, req := range []*http.Request{
		httptest.NewRequest("GET", "/health", nil),
		httptest.NewRequest("GET", "/api/orders/7", nil),
		httptest.NewRequest("POST", "/api/orders", nil),
	} {
		resp, err := app.Test(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	var names []string
	for _, r := range eng.Resources() {
		names = append(names, r.Name())
	}
	slices.Sort(names)
	fmt.Println(strings.Join(names, "\n"))
	// Output:
	// GET /api/orders/:id
	// POST /api/orders
}
