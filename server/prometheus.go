package server

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/server/metrics"
)

// prometheusHandler serves GET /metrics: the pipeline's exposition, in the
// text format, gzipped when the scraper asks for it.
type prometheusHandler struct {
	metrics *metrics.Pipeline
}

// serve writes the exposition, streamed as the scraper reads it.
//
//	@Summary		Prometheus metrics
//	@ID				getPrometheusMetrics
//	@Description	The Prometheus text exposition: per-resource counters (label resource) of pass, block, shadow block, complete and error, an RT histogram (sluice_resource_response_time_seconds, buckets from 1 ms to 10 s; the engine keeps no per-call distribution, so the calls of each collection are counted in the bucket of their mean: count and sum are exact, the buckets approximate), current concurrency, breaker state, the fleet's counters by app and resource (sluice_fleet_*_total, from the instances' reported minutes) and instances by state (sluice_instances), and the Go process's figures; gzipped when Accept-Encoding allows it. It takes a bearer token of role viewer or above (not an instance token), unless the server runs with --public-metrics.
//	@Tags			metrics
//	@Produce		plain
//	@Success		200	{string}	string			"the text exposition format 0.0.4"
//	@Failure		401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one (without --public-metrics)"
//	@Failure		403	{object}	ErrorResponse	"an instance token (without --public-metrics)"
//	@Security		BearerAuth
//	@Router			/metrics [get]
func (h *prometheusHandler) serve(c *fiber.Ctx) error {
	scrape, err := h.metrics.Scrape()
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, metrics.ExpositionContentType)
	gzipped := strings.Contains(c.Get(fiber.HeaderAcceptEncoding), "gzip")
	if gzipped {
		c.Set(fiber.HeaderContentEncoding, "gzip")
	}
	// HEAD answers the headers alone: a streamed body, even one left
	// unsent, would put the end of a chunked body on the connection,
	// where the client reads it as the start of its next answer.
	if c.Method() == http.MethodHead {
		return nil
	}
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		var out io.Writer = w
		var zw *gzip.Writer
		if gzipped {
			zw, _ = gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level never fails
			out = zw
		}
		// An error here is the scraper gone: nothing is left to tell.
		if scrape.Write(out) != nil {
			return
		}
		if zw != nil && zw.Close() != nil {
			return
		}
		_ = w.Flush()
	})
	return nil
}

// bindPrometheus mounts GET /metrics, the Prometheus exposition of the
// resources' figures and of the process, behind guard (the bearer token
// check, or nothing with Config.PublicMetrics).
func bindPrometheus(app *fiber.App, h *prometheusHandler, guard fiber.Handler) {
	app.Get("/metrics", guard, h.serve)
}
