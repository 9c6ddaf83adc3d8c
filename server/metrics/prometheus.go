package metrics

import (
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/sluicehq/sluice/engine"
)

// engineCollector exposes, at every scrape, the breakers' states, the
// adaptive limits and the engine's bounds.
type engineCollector struct {
	engine                          *engine.Engine
	breakerState, tracked, overflow *prometheus.Desc
	adaptiveLimit                   *prometheus.Desc
	clusterState, clusterChanges    *prometheus.Desc
	clusterRule, clusterEngines     *prometheus.Desc
}

func newEngineCollector(eng *engine.Engine) *engineCollector {
	return &engineCollector{
		engine: eng,
		breakerState: prometheus.NewDesc("sluice_breaker_state",
			"1 for the state each circuit breaker is in, 0 for the others.",
			[]string{"rule", "resource", "state"}, nil),
		adaptiveLimit: prometheus.NewDesc("sluice_adaptive_limit",
			"The calls in flight each adaptive concurrency rule allows now, as it learned from latency (one series per rule, shadow rules too).",
			[]string{"rule", "resource", "mode"}, nil),
		tracked: prometheus.NewDesc("sluice_resources_tracked",
			"Resources the engine tracks; past --max-resources, calls on new ones are counted under "+engine.OverflowResource+".", nil, nil),
		overflow: prometheus.NewDesc("sluice_resource_overflow_total",
			"Calls on new resources that the engine, full (--max-resources), counted under the resource "+engine.OverflowResource+".", nil, nil),
		clusterState: prometheus.NewDesc("sluice_cluster_state",
			"With --redis: 1 for the state the server's cluster rules are in (cluster: on the shared count; fallback: Redis unreachable), 0 for the other.",
			[]string{"state"}, nil),
		clusterChanges: prometheus.NewDesc("sluice_cluster_state_changes_total",
			"With --redis: how many times the server's cluster rules fell back or came back.", nil, nil),
		clusterRule: prometheus.NewDesc("sluice_cluster_rule_fallback",
			"1 while a cluster rule decides by its clusterFallback (label fallback) on the server, 0 while on the shared count.",
			[]string{"rule", "resource", "fallback"}, nil),
		clusterEngines: prometheus.NewDesc("sluice_cluster_rule_engines",
			"How many engines (server replicas and instances) shared a cluster rule, as Redis last said.",
			[]string{"rule", "resource"}, nil),
	}
}

// Describe sends every metric's description.
func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.breakerState, c.adaptiveLimit, c.tracked, c.overflow, c.clusterState, c.clusterChanges, c.clusterRule, c.clusterEngines} {
		ch <- d
	}
}

// Collect reads the figures as they are now.
func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.engine.Breakers() {
		for _, state := range []engine.BreakerState{engine.BreakerClosed, engine.BreakerOpen, engine.BreakerHalfOpen} {
			ch <- prometheus.MustNewConstMetric(c.breakerState, prometheus.GaugeValue, flag(b.State == state), b.Rule, b.Resource, string(state))
		}
	}
	for _, a := range c.engine.AdaptiveLimits() {
		ch <- prometheus.MustNewConstMetric(c.adaptiveLimit, prometheus.GaugeValue, float64(a.Limit), a.Rule, a.Resource, string(a.Mode))
	}
	ch <- prometheus.MustNewConstMetric(c.tracked, prometheus.GaugeValue, float64(c.engine.ResourceCount()))
	ch <- prometheus.MustNewConstMetric(c.overflow, prometheus.CounterValue, float64(c.engine.Overflow().Calls))
	c.collectCluster(ch)
}

// collectCluster reads the state of the cluster rules, if the engine has
// a shared count.
func (c *engineCollector) collectCluster(ch chan<- prometheus.Metric) {
	st := c.engine.ClusterStatus()
	if !st.Enabled {
		return
	}
	for _, state := range []engine.ClusterState{engine.ClusterShared, engine.ClusterFallingBack} {
		ch <- prometheus.MustNewConstMetric(c.clusterState, prometheus.GaugeValue, flag(st.State == state), string(state))
	}
	ch <- prometheus.MustNewConstMetric(c.clusterChanges, prometheus.CounterValue, float64(st.Changes))
	for _, r := range st.Rules {
		ch <- prometheus.MustNewConstMetric(c.clusterRule, prometheus.GaugeValue, flag(r.FallingBack), r.Rule, r.Resource, string(r.Fallback))
		ch <- prometheus.MustNewConstMetric(c.clusterEngines, prometheus.GaugeValue, float64(r.Engines), r.Rule, r.Resource)
	}
}

// flag is 1 for true, 0 for false.
func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// resourceRow is one tracked resource's figures at a scrape: what the
// pipeline collected for it since the server started or the resource came
// back after an eviction (the same deltas it writes to the history), and
// its calls in flight.
type resourceRow struct {
	name        string
	totals      engine.Counts
	byReason    reasonCounts
	rt          rtHistogram
	concurrency int64
}

// rtBucketsMs are the upper bounds of the response time histogram's
// buckets, in milliseconds; the +Inf bucket follows.
var rtBucketsMs = [...]float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}

// rtBucketLabels are the le labels of the buckets, in seconds, +Inf last,
// each closing a label set that its resource label opens.
var rtBucketLabels = func() []string {
	labels := make([]string, 0, len(rtBucketsMs)+1)
	for _, ms := range rtBucketsMs {
		labels = append(labels, `,le="`+strconv.FormatFloat(ms/1000, 'g', -1, 64)+`"}`)
	}
	return append(labels, `,le="+Inf"}`)
}()

// rtHistogram counts a resource's completed calls by response time, bucket
// by bucket (not cumulative), the last bucket +Inf.
//
// The engine keeps no distribution of response times, only their sum and
// extremes per minute, so the histogram is approximate: each collection's
// completed calls (what the engine recorded since the one before; the
// pipeline collects at every flush, scrape and read) are counted in the
// bucket of their mean. Its count and sum are exact, the same as the
// completed counter's and the history's; a slow call among fast ones of
// the same collection is averaged in.
type rtHistogram [len(rtBucketsMs) + 1]int64

// observe counts the completed calls of a collected delta in the bucket of
// their mean response time.
func (h *rtHistogram) observe(delta engine.Counts) {
	if delta.Complete <= 0 {
		return
	}
	mean := delta.AvgRtMs()
	i := 0
	for i < len(rtBucketsMs) && mean > rtBucketsMs[i] {
		i++
	}
	h[i] += delta.Complete
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
	{name: "sluice_resource_blocked_by_reason_total", kind: "counter",
		help: "Calls blocked, by the kind of rule that blocked (reason: " + reasonList + "); a reason appears once it blocked. They sum to sluice_resource_blocked_total.",
		appendSamples: func(b []byte, name, label string, r *resourceRow) []byte {
			return r.byReason.appendSamples(b, name, label)
		}},
	counterFamily("sluice_resource_shadow_blocked_total", "Calls a shadow rule would have blocked (they passed).", func(r *resourceRow) int64 { return r.totals.ShadowBlock }),
	counterFamily("sluice_resource_completed_total", "Calls completed, failed ones included.", func(r *resourceRow) int64 { return r.totals.Complete }),
	counterFamily("sluice_resource_errors_total", "Calls completed with an error.", func(r *resourceRow) int64 { return r.totals.Error }),
	{name: "sluice_resource_response_time_seconds", kind: "histogram",
		help: "Response time of the completed calls. Approximate buckets: the calls of each collection (every flush, scrape and read) are counted at their mean; count and sum are exact.",
		appendSamples: func(b []byte, name, label string, r *resourceRow) []byte {
			open := label[:len(label)-1]
			var cumulative int64
			for i, le := range rtBucketLabels {
				cumulative += r.rt[i]
				b = append(append(append(append(b, name...), "_bucket"...), open...), le...)
				b = append(strconv.AppendInt(append(b, ' '), cumulative, 10), '\n')
			}
			b = appendFloatSample(b, name+"_sum", label, float64(r.totals.RtSumMs)/1000)
			return appendSample(b, name+"_count", label, r.totals.Complete)
		}},
	{name: "sluice_resource_concurrency", help: "Calls in flight.", kind: "gauge",
		appendSamples: func(b []byte, name, label string, r *resourceRow) []byte {
			return appendSample(b, name, label, r.concurrency)
		}},
}

// reasonCounts counts blocked calls by reason, in the order of
// engine.BlockReasons: the reason label's values are that fixed set, never
// a rule's name, so that a series stays bounded.
type reasonCounts [len(engine.BlockReasons)]int64

// reasonList is the reasons, for the families' help.
var reasonList = func() string {
	names := make([]string, len(engine.BlockReasons))
	for i, r := range engine.BlockReasons {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}()

// reasonLabels are the reason labels of the families, in the order of
// reasonCounts, each closing a label set that its other labels open.
var reasonLabels = func() []string {
	labels := make([]string, len(engine.BlockReasons))
	for i, r := range engine.BlockReasons {
		labels[i] = `,reason="` + string(r) + `"}`
	}
	return labels
}()

// add counts blocks by their reason; one of a reason the pipeline does
// not know is counted as system, so that the reasons still sum to the
// blocked calls.
func (c *reasonCounts) add(blocks []engine.RuleBlocks) {
	for _, b := range blocks {
		i := slices.Index(engine.BlockReasons[:], b.Reason)
		if i < 0 {
			i = slices.Index(engine.BlockReasons[:], engine.ReasonSystem)
		}
		c[i] += b.Blocked
	}
}

// appendSamples appends a line of name per reason that blocked, label
// (`{...}`) given the reason.
func (c *reasonCounts) appendSamples(b []byte, name, label string) []byte {
	open := label[:len(label)-1]
	for i, n := range c {
		if n > 0 {
			b = append(append(append(b, name...), open...), reasonLabels[i]...)
			b = append(strconv.AppendInt(append(b, ' '), n, 10), '\n')
		}
	}
	return b
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
	out := chunks{w: w, b: make([]byte, 0, 64<<10)}
	for _, f := range resourceFamilies {
		out.b = append(out.b, "# HELP "+f.name+" "+f.help+"\n# TYPE "+f.name+" "+f.kind+"\n"...)
		for i := range rows {
			out.b = f.appendSamples(out.b, f.name, labels[i], &rows[i])
			if err := out.flushFull(); err != nil {
				return err
			}
		}
	}
	return out.flush()
}

// chunks writes the text exposition to w a buffer of about 60 KiB at a
// time.
type chunks struct {
	w io.Writer
	b []byte
}

// flushFull writes the buffer once it holds 60 KiB or more.
func (c *chunks) flushFull() error {
	if len(c.b) > 60<<10 {
		return c.flush()
	}
	return nil
}

// flush writes what the buffer holds.
func (c *chunks) flush() error {
	_, err := c.w.Write(c.b)
	c.b = c.b[:0]
	return err
}

// ExpositionContentType is the Content-Type of the exposition, the text
// format 0.0.4.
var ExpositionContentType = string(expositionFormat)

var expositionFormat = expfmt.NewFormat(expfmt.TypeTextPlain)

// newRegistry gathers the breakers, the engine's bounds and the Go
// process at every scrape.
func newRegistry(eng *engine.Engine) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		newEngineCollector(eng),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// MustRegister adds collectors to the exposition, beside the engine's
// figures.
func (p *Pipeline) MustRegister(cs ...prometheus.Collector) { p.registry.MustRegister(cs...) }

// Scrape is the Prometheus exposition's figures as one scrape took them.
type Scrape struct {
	rows     []resourceRow
	fleet    []fleetRow
	families []*dto.MetricFamily
}

// Scrape takes the figures of the exposition: the per-resource families
// from what the pipeline collected for every tracked resource, then what
// the registry gathers.
func (p *Pipeline) Scrape() (*Scrape, error) {
	families, err := p.registry.Gather()
	if err != nil {
		return nil, err
	}
	return &Scrape{rows: p.rows(p.engine.Resources()), fleet: p.fleet.rows(), families: families}, nil
}

// rows collects, then returns the rows of resources: what was collected
// for each since the server started or the resource came back after an
// eviction (zero for one never collected), and its calls in flight.
func (p *Pipeline) rows(resources []*engine.Resource) []resourceRow {
	p.Collect()
	p.mu.Lock()
	defer p.mu.Unlock()
	rows := make([]resourceRow, len(resources))
	for i, r := range resources {
		rows[i] = resourceRow{name: r.Name(), concurrency: r.Concurrency()}
		if t, ok := p.resources[r.Name()]; ok {
			rows[i].totals, rows[i].rt, rows[i].byReason = t.totals, t.rt, t.byReason
		}
	}
	return rows
}

// Write writes the scrape to w in the text format, a buffer at a time; an
// error is w's.
func (s *Scrape) Write(w io.Writer) error {
	if err := writeResourceFamilies(w, s.rows); err != nil {
		return err
	}
	if err := writeFleetFamilies(w, s.fleet); err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expositionFormat)
	for _, mf := range s.families {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}
