package metrics

import (
	"cmp"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/sluicehq/sluice/engine"
)

// fleetKey is one series of the fleet's counters: a resource, as the
// instances of an app counted it.
type fleetKey struct{ app, resource string }

// fleetTotals sums the finished minutes the instances reported to this
// server, by app and resource, for the Prometheus exposition: counters
// that move as the instances' minutes finish (up to a minute after the
// calls). Each replica counts the reports it received: the fleet's total
// is the sum over replicas. At most the engine's MaxResources series are
// kept: past it, a new one is counted under the app's
// engine.OverflowResource series.
type fleetTotals struct {
	mu     sync.Mutex
	series map[fleetKey]*fleetRow
}

// add counts what a report's new minutes added, by resource, for app,
// and their blocks by rule.
func (f *fleetTotals) add(app string, counts map[string]engine.Counts, blocks map[string][]engine.RuleBlocks, most int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.series == nil {
		f.series = map[fleetKey]*fleetRow{}
	}
	for resource, c := range counts {
		k := fleetKey{app, resource}
		sum, ok := f.series[k]
		if !ok && len(f.series) >= most {
			k.resource = engine.OverflowResource
			sum, ok = f.series[k]
		}
		if !ok {
			sum = &fleetRow{fleetKey: k}
			f.series[k] = sum
		}
		sum.totals.Merge(c)
		sum.byReason.add(blocks[resource])
	}
}

// fleetRow is one series at a scrape.
type fleetRow struct {
	fleetKey
	totals   engine.Counts
	byReason reasonCounts
}

// rows returns the series, by app and resource.
func (f *fleetTotals) rows() []fleetRow {
	f.mu.Lock()
	defer f.mu.Unlock()
	rows := make([]fleetRow, 0, len(f.series))
	for _, k := range slices.SortedFunc(maps.Keys(f.series), func(a, b fleetKey) int {
		return cmp.Or(cmp.Compare(a.app, b.app), cmp.Compare(a.resource, b.resource))
	}) {
		rows = append(rows, *f.series[k])
	}
	return rows
}

// fleetFamilies are the fleet's counters, written by hand as the
// resources' are.
var fleetFamilies = []struct {
	name, help string
	value      func(*engine.Counts) int64
}{
	{"sluice_fleet_passed_total", "Calls the instances let through, by app and resource, counted as their minutes finish.", func(c *engine.Counts) int64 { return c.Pass }},
	{"sluice_fleet_blocked_total", "Calls the instances blocked.", func(c *engine.Counts) int64 { return c.Block }},
	{"sluice_fleet_shadow_blocked_total", "Calls a shadow rule of the instances would have blocked (they passed).", func(c *engine.Counts) int64 { return c.ShadowBlock }},
	{"sluice_fleet_completed_total", "Calls the instances completed, failed ones included.", func(c *engine.Counts) int64 { return c.Complete }},
	{"sluice_fleet_errors_total", "Calls the instances completed with an error.", func(c *engine.Counts) int64 { return c.Error }},
}

// writeFleetFamilies writes the fleet's counters of rows to w.
func writeFleetFamilies(w io.Writer, rows []fleetRow) error {
	labels := make([]string, len(rows))
	for i, r := range rows {
		labels[i] = `{app="` + labelEscaper.Replace(r.app) + `",resource="` + labelEscaper.Replace(r.resource) + `"}`
	}
	out := chunks{w: w, b: make([]byte, 0, 64<<10)}
	for _, f := range fleetFamilies {
		out.b = append(out.b, "# HELP "+f.name+" "+f.help+"\n# TYPE "+f.name+" counter\n"...)
		for i := range rows {
			out.b = appendSample(out.b, f.name, labels[i], f.value(&rows[i].totals))
			if err := out.flushFull(); err != nil {
				return err
			}
		}
	}
	const byReason = "sluice_fleet_blocked_by_reason_total"
	out.b = append(out.b, "# HELP "+byReason+" Calls the instances blocked, by the kind of rule that blocked (reason: "+reasonList+"); a reason appears once it blocked.\n# TYPE "+byReason+" counter\n"...)
	for i := range rows {
		out.b = rows[i].byReason.appendSamples(out.b, byReason, labels[i])
		if err := out.flushFull(); err != nil {
			return err
		}
	}
	return out.flush()
}
