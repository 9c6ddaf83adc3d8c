package ginmw_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/ginmw"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
)

// TestRateLimitHeaders runs the shared header cases through a real
// listener.
func TestRateLimitHeaders(t *testing.T) {
	for _, c := range guardtest.HeaderCases {
		t.Run(c.Name, func(t *testing.T) {
			opts := []ginmw.Option{ginmw.WithRateLimitHeaders(c.Style), ginmw.WithParam(ginmw.Query("user"))}
			if c.Details {
				opts = append(opts, ginmw.WithBlockDetails())
			}
			c.Run(t, "GET /orders/:id", func(eng *engine.Engine) string {
				r := gin.New()
				r.Use(ginmw.Guard(eng, opts...))
				r.GET("/orders/:id", func(c *gin.Context) { c.String(http.StatusOK, "order "+c.Param("id")) })
				srv := httptest.NewServer(r)
				t.Cleanup(srv.Close)
				return srv.URL
			})
		})
	}
}
