package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sluicehq/sluice/server/servertest"
)

// BenchmarkCheckHandler runs check requests through the whole Fiber app,
// middleware and bearer-token authentication included, without a network:
// the server's share of a request.
func BenchmarkCheckHandler(b *testing.B) {
	// The listener goes unused: the requests go to the app's handler.
	srv := startServer(b, nil, nil, servertest.DiscardLogs())
	checks := make([]string, 100)
	for i := range checks {
		checks[i] = fmt.Sprintf(`{"resource":"bench-%d","count":1}`, i%10)
	}
	for _, bb := range []struct {
		name, path, body string
		decisions        int
	}{
		{"single", "/api/v1/check", `{"resource":"bench","count":1}`, 1},
		{"batch of 100", "/api/v1/check/batch", `{"checks":[` + strings.Join(checks, ",") + `]}`, 100},
	} {
		b.Run(bb.name, func(b *testing.B) {
			h := srv.app.Handler()
			var ctx fasthttp.RequestCtx
			b.ReportAllocs()
			for b.Loop() {
				ctx.Request.Reset()
				ctx.Request.Header.SetMethod("POST")
				ctx.Request.SetRequestURI(bb.path)
				ctx.Request.Header.SetContentType("application/json")
				ctx.Request.Header.Set("Authorization", "Bearer "+servertest.AdminToken)
				ctx.Request.SetBodyString(bb.body)
				ctx.Response.Reset()
				h(&ctx)
				if ctx.Response.StatusCode() != 200 {
					b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
				}
			}
			b.ReportMetric(float64(b.N*bb.decisions)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
