package fibermw_test

import (
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/fibermw"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
)

// extractor is the Fiber extractor of a shared case's source.
func extractor(t *testing.T, s guardtest.Source) fibermw.Extractor {
	switch s.Kind {
	case "ip":
		return fibermw.ClientIP()
	case "header":
		return fibermw.Header(s.Name)
	case "query":
		return fibermw.Query(s.Name)
	case "path":
		return fibermw.Param(s.Name)
	case "func":
		return fibermw.Func("tenant", func(c *fiber.Ctx) string {
			return strings.ToLower(c.Get("X-Tenant"))
		})
	}
	t.Fatalf("no extractor %q", s.Kind)
	return fibermw.Extractor{}
}

// TestParams runs the shared extractor cases through a real listener. The
// client keeps its connection, so Fiber reuses one request's memory for
// the next: the values the engine keeps must not change with it.
func TestParams(t *testing.T) {
	for _, c := range guardtest.ParamCases {
		t.Run(c.Name, func(t *testing.T) {
			// The answers name the rule that blocked, which the cases check.
			opts := []fibermw.Option{fibermw.WithBlockDetails()}
			if c.Origin != nil {
				opts = append(opts, fibermw.WithOrigin(extractor(t, *c.Origin)))
			}
			for _, s := range c.Params {
				opts = append(opts, fibermw.WithParam(extractor(t, s)))
			}
			if c.Proxies != nil {
				opts = append(opts, fibermw.WithTrustedProxies(c.Proxies...))
			}
			c.Run(t, "GET /orders/:id", func(eng *engine.Engine) string {
				app := fiber.New()
				app.Get("/orders/:id", fibermw.Guard(eng, opts...), func(c *fiber.Ctx) error {
					return c.SendString("order " + c.Params("id"))
				})
				return serveFiber(t, app)
			})
		})
	}
}

// TestExtractorKeys: the param keys follow API.md's naming, which hotspot
// rules name.
func TestExtractorKeys(t *testing.T) {
	tests := []struct {
		x    fibermw.Extractor
		want string
	}{
		{fibermw.ClientIP(), "ip"},
		{fibermw.Header("X-User"), "header:X-User"},
		{fibermw.Query("key"), "query:key"},
		{fibermw.Param("id"), "path:id"},
		{fibermw.Func("tenant", func(*fiber.Ctx) string { return "" }), "tenant"},
	}
	for _, tt := range tests {
		if got := tt.x.Key(); got != tt.want {
			t.Errorf("Key() = %q, want %q", got, tt.want)
		}
	}
}
