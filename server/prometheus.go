package server

import (
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicehq/sluice/engine"
)

// resourceCollector exposes, at every scrape, the traffic the flusher has
// collected per tracked resource since the server started or the resource
// came back after an eviction (the same deltas it writes to the history),
// the calls in flight, the breakers' states and the engine's bounds.
type resourceCollector struct {
	engine  *engine.Engine
	flusher *metricsFlusher

	passed, blocked, shadowBlocked, completed, errored *prometheus.Desc
	responseTime, concurrency, breakerState            *prometheus.Desc
	tracked, overflow                                  *prometheus.Desc
}

func newResourceCollector(eng *engine.Engine, f *metricsFlusher) *resourceCollector {
	perResource := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("sluice_resource_"+name, help, []string{"resource"}, nil)
	}
	return &resourceCollector{
		engine:        eng,
		flusher:       f,
		passed:        perResource("passed_total", "Calls let through."),
		blocked:       perResource("blocked_total", "Calls blocked by a rule."),
		shadowBlocked: perResource("shadow_blocked_total", "Calls a shadow rule would have blocked (they passed)."),
		completed:     perResource("completed_total", "Calls completed, failed ones included."),
		errored:       perResource("errors_total", "Calls completed with an error."),
		responseTime:  perResource("response_time_seconds", "Response time of the completed calls."),
		concurrency:   perResource("concurrency", "Calls in flight."),
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
func (c *resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.passed, c.blocked, c.shadowBlocked, c.completed, c.errored, c.responseTime, c.concurrency, c.breakerState, c.tracked, c.overflow} {
		ch <- d
	}
}

// Collect reads the figures as they are now.
func (c *resourceCollector) Collect(ch chan<- prometheus.Metric) {
	tallies := c.flusher.tallies()
	for _, r := range c.engine.Resources() {
		name := r.Name()
		t := tallies[name].totals
		for _, m := range []struct {
			desc  *prometheus.Desc
			count int64
		}{
			{c.passed, t.Pass}, {c.blocked, t.Block}, {c.shadowBlocked, t.ShadowBlock},
			{c.completed, t.Complete}, {c.errored, t.Error},
		} {
			ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(m.count), name)
		}
		ch <- prometheus.MustNewConstSummary(c.responseTime, uint64(t.Complete), float64(t.RtSumMs)/1000, nil, name)
		ch <- prometheus.MustNewConstMetric(c.concurrency, prometheus.GaugeValue, float64(r.Concurrency()), name)
	}
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

// bindPrometheus mounts GET /metrics, the Prometheus exposition of the
// resources' figures and of the process, behind guard (the bearer token
// check, or nothing with Config.PublicMetrics).
func bindPrometheus(app *fiber.App, eng *engine.Engine, f *metricsFlusher, guard fiber.Handler) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		newResourceCollector(eng, f),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	app.Get("/metrics", guard, adaptor.HTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
}
