package echomw_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/echomw"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
)

// TestRateLimitHeaders runs the shared header cases through a real
// listener.
func TestRateLimitHeaders(t *testing.T) {
	for _, c := range guardtest.HeaderCases {
		t.Run(c.Name, func(t *testing.T) {
			opts := []echomw.Option{echomw.WithRateLimitHeaders(c.Style), echomw.WithParam(echomw.Query("user"))}
			if c.Details {
				opts = append(opts, echomw.WithBlockDetails())
			}
			c.Run(t, "GET /orders/:id", func(eng *engine.Engine) string {
				r := echo.New()
				r.Use(echomw.Guard(eng, opts...))
				r.GET("/orders/:id", func(c echo.Context) error { return c.String(http.StatusOK, "order "+c.Param("id")) })
				srv := httptest.NewServer(r)
				t.Cleanup(srv.Close)
				return srv.URL
			})
		})
	}
}
