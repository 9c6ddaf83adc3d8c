package fibermw_test

import (
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/fibermw"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
)

// kit is what the shared extractor cases build Fiber guards of.
var kit = guardtest.Kit[fibermw.Extractor, fibermw.Option]{
	ClientIP: fibermw.ClientIP,
	Header:   fibermw.Header,
	Query:    fibermw.Query,
	Path:     fibermw.Param,
	Cookie:   fibermw.Cookie,
	Tenant: fibermw.Func("tenant", func(c *fiber.Ctx) string {
		return strings.ToLower(c.Get("X-Tenant"))
	}),
	WithOrigin:         fibermw.WithOrigin,
	WithParam:          fibermw.WithParam,
	WithTrustedProxies: fibermw.WithTrustedProxies,
}

// TestParams runs the shared extractor cases through a real listener. The
// client keeps its connection, so Fiber reuses one request's memory for
// the next: the values the engine keeps must not change with it.
func TestParams(t *testing.T) {
	for _, c := range guardtest.ParamCases {
		t.Run(c.Name, func(t *testing.T) {
			// The answers name the rule that blocked, which the cases check.
			opts := append(kit.Options(t, c), fibermw.WithBlockDetails())
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

// TestExtractorKeys: the param keys follow docs/api.md's naming, which hotspot
// rules name.
func TestExtractorKeys(t *testing.T) { kit.CheckKeys(t) }
