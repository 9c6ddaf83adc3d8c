package server

import (
	"bufio"
	"compress/gzip"
	"io"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/sluicehq/sluice/engine"
)

// engineCollector exposes, at every scrape, the breakers' states and the
// engine's bounds.
type engineCollector struct {
	engine                          *engine.Engine
	breakerState, tracked, overflow *prometheus.Desc
}

func newEngineCollector(eng *engine.Engine) *engineCollector {
	return &engineCollector{
		engine: eng,
		breakerState: prometheus.NewDesc("sluice_breaker_state",
			"1 for the state each circuit breaker is in, 0 for the others.",
			[]string{"rule", "resource", "state"}, nil),
		tracked: prometheus.NewDesc("sluice_resources_tracked",
			"Resources the engine tracks; past --max-resources, calls on new ones are counted under "+engine.OverflowResource+".", nil, nil),
		overflow: prometheus.NewDesc("sluice_resource_overflow_total",
			"Calls on new resources that the engine, full (--max-resources), counted under the resource "+engine.OverflowResource+".", nil, nil),
	}
}

// Describe sends every metric's description.
func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.breakerState, c.tracked, c.overflow} {
		ch <- d
	}
}

// Collect reads the figures as they are now.
func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.engine.Breakers() {
		for _, state := range []engine.BreakerState{engine.BreakerClosed, engine.BreakerOpen, engine.BreakerHalfOpen} {
			v := 0.0
			if b.State == state {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.breakerState, prometheus.GaugeValue, v, b.Rule, b.Resource, string(state))
		}
	}
	ch <- prometheus.MustNewConstMetric(c.tracked, prometheus.GaugeValue, float64(c.engine.ResourceCount()))
	ch <- prometheus.MustNewConstMetric(c.overflow, prometheus.CounterValue, float64(c.engine.Overflow().Calls))
}

// resourceRow is one tracked resource's figures at a scrape: what the
// flusher collected for it since the server started or the resource came
// back after an eviction (the same deltas it writes to the history), and
// its calls in flight.
type resourceRow struct {
	name        string
	totals      engine.Counts
	concurrency int64
}

// resourceFamily is one per-resource metric family of the exposition.
type resourceFamily struct {
	name, help, kind string
	// appendSamples appends the family's lines of one resource, whose
	// label is given as `{resource="..."}`.
	appendSamples func(b []byte, name, label string, r *resourceRow) []byte
}

func counterFamily(name, help string, value func(*resourceRow) int64) resourceFamily {
	return resourceFamily{name: name, help: help, kind: "counter",
		appendSamples: func(b []byte, name, label string, r *resourceRow) []byte {
			return appendSample(b, name, label, value(r))
		}}
}

// resourceFamilies are written by hand rather than as client_golang
// metrics: at 100,000 resources those took seconds and half a gigabyte of
// garbage a scrape, these a fraction of a second and nothing per series.
var resourceFamilies = []resourceFamily{
	counterFamily("sluice_resource_passed_total", "Calls let through.", func(r *resourceRow) int64 { return r.totals.Pass }),
	counterFamily("sluice_resource_blocked_total", "Calls blocked by a rule.", func(r *resourceRow) int64 { return r.totals.Block }),
	counterFamily("sluice_resource_shadow_blocked_total", "Calls a shadow rule would have blocked (they passed).", func(r *resourceRow) int64 { return r.totals.ShadowBlock }),
	counterFamily("sluice_resource_completed_total", "Calls completed, failed ones included.", func(r *resourceRow) int64 { return r.totals.Complete }),
	counterFamily("sluice_resource_errors_total", "Calls completed with an error.", func(r *resourceRow) int64 { return r.totals.Error }),
	{name: "sluice_resource_response_time_seconds", help: "Response time of the completed calls.", kind: "summary",
		appendSamples: func(b []byte, name, label string, r *resourceRow) []byte {
			b = appendFloatSample(b, name+"_sum", label, float64(r.totals.RtSumMs)/1000)
			return appendSample(b, name+"_count", label, r.totals.Complete)
		}},
	{name: "sluice_resource_concurrency", help: "Calls in flight.", kind: "gauge",
		appendSamples: func(b []byte, name, label string, r *resourceRow) []byte {
			return appendSample(b, name, label, r.concurrency)
		}},
}

// appendSample appends one line of the text format with a whole value.
func appendSample(b []byte, name, label string, v int64) []byte {
	b = append(append(append(b, name...), label...), ' ')
	return append(strconv.AppendInt(b, v, 10), '\n')
}

// appendFloatSample appends one line of the text format, its value
// written as client_golang writes a float.
func appendFloatSample(b []byte, name, label string, v float64) []byte {
	b = append(append(append(b, name...), label...), ' ')
	return append(strconv.AppendFloat(b, v, 'g', -1, 64), '\n')
}

// labelEscaper escapes a label value for the text format.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// writeResourceFamilies writes every per-resource family of rows to w, a
// buffer at a time.
func writeResourceFamilies(w io.Writer, rows []resourceRow) error {
	labels := make([]string, len(rows))
	for i := range rows {
		labels[i] = `{resource="` + labelEscaper.Replace(rows[i].name) + `"}`
	}
	b := make([]byte, 0, 64<<10)
	for _, f := range resourceFamilies {
		b = append(b, "# HELP "+f.name+" "+f.help+"\n# TYPE "+f.name+" "+f.kind+"\n"...)
		for i := range rows {
			b = f.appendSamples(b, f.name, labels[i], &rows[i])
			if len(b) > 60<<10 {
				if _, err := w.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
		}
	}
	_, err := w.Write(b)
	return err
}

// prometheusHandler serves GET /metrics: the per-resource families, then
// what the registry gathers (breakers, the engine's bounds, the Go
// process), in the text format, gzipped when the scraper asks for it.
type prometheusHandler struct {
	engine  *engine.Engine
	flusher *metricsFlusher
	gather  prometheus.Gatherer
}

// serve writes the exposition, streamed as the scraper reads it.
//
//	@Summary		Prometheus metrics
//	@ID				getPrometheusMetrics
//	@Description	The Prometheus text exposition: per-resource counters (label resource) of pass, block, shadow block, complete and error, an RT histogram, current concurrency, breaker state, and the Go process's figures; gzipped when Accept-Encoding allows it. It takes a bearer token of any role, unless the server runs with --public-metrics.
//	@Tags			metrics
//	@Produce		plain
//	@Success		200	{string}	string			"the text exposition format 0.0.4"
//	@Failure		401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one (without --public-metrics)"
//	@Security		BearerAuth
//	@Router			/metrics [get]
func (h *prometheusHandler) serve(c *fiber.Ctx) error {
	families, err := h.gather.Gather()
	if err != nil {
		return err
	}
	resources := h.engine.Resources()
	totals := h.flusher.totals(resources)
	rows := make([]resourceRow, len(resources))
	for i, r := range resources {
		rows[i] = resourceRow{name: r.Name(), totals: totals[i], concurrency: r.Concurrency()}
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	c.Set(fiber.HeaderContentType, string(format))
	gzipped := strings.Contains(c.Get(fiber.HeaderAcceptEncoding), "gzip")
	if gzipped {
		c.Set(fiber.HeaderContentEncoding, "gzip")
	}
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		var out io.Writer = w
		var zw *gzip.Writer
		if gzipped {
			zw, _ = gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level never fails
			out = zw
		}
		// An error here is the scraper gone: nothing is left to tell.
		if writeResourceFamilies(out, rows) != nil {
			return
		}
		enc := expfmt.NewEncoder(out, format)
		for _, mf := range families {
			if enc.Encode(mf) != nil {
				return
			}
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
func bindPrometheus(app *fiber.App, eng *engine.Engine, f *metricsFlusher, guard fiber.Handler) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		newEngineCollector(eng),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	h := &prometheusHandler{engine: eng, flusher: f, gather: reg}
	app.Get("/metrics", guard, h.serve)
}
