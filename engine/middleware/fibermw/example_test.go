package fibermw_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/fibermw"
)

// A Fiber service guards a route by putting the guard first among its
// handlers.
func ExampleGuard() {
	eng := engine.New(engine.Options{})
	defer eng.Close()
	err := eng.LoadFlowRules([]engine.FlowRule{
		{Name: "orders-qps", Resource: "GET /orders/:id", Threshold: 1},
	})
	if err != nil {
		panic(err)
	}
	app := fiber.New()
	app.Get("/orders/:id", fibermw.Guard(eng), func(c *fiber.Ctx) error {
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

// Router guards every route registered through it, each under its own
// pattern; routes registered on the app directly, like a health check, stay
// unguarded.
func ExampleRouter() {
	eng := engine.New(engine.Options{})
	defer eng.Close()
	app := fiber.New()
	app.Get("/health", func(c *fiber.Ctx) error { return c.SendString("ok") })
	api := fibermw.Router(app.Group("/api"), fibermw.Guard(eng))
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
