// Command accuracy measures, on the wall clock, how closely Sluice and
// sentinel-golang hold a rule of 100 passes per second, one engine after the
// other in the same process. These are docs/engine.md's accuracy figures:
//
//   - reject: a QPS reject rule (threshold 100, statIntervalMs 1000) under
//     traffic of several shapes: hammered by two goroutines, and evenly
//     paced by one goroutine at 1.05, 1.2, 2 and 10 times the threshold
//     (calls on schedule, each made at once if the loop is late). Every call
//     is timed to the microsecond as it begins and as it returns, and a
//     pass was decided in between; the report gives, per shape and engine
//     side by side, the most passes surely decided within one real
//     1-second window (begun and returned within it, the window sliding
//     over every return, the first second included: timing a call on one
//     side only would put passes a second apart, as an exact engine
//     decides them at a window's edge, a few microseconds closer or
//     further), the passes in the first second, and the mean per second
//     after the first.
//   - throttling: a throttling rule (threshold 100, maxQueueingTimeMs 500)
//     called by two goroutines that sleep the wait they are given (both
//     engines sleep inside Entry); the report gives the mean spacing between
//     consecutive passes and the smallest spacing.
//   - hotspot: a hotspot rule of 10 passes per second per value, its 100
//     values hammered in turn by two goroutines; the report gives the most
//     passes of any one value in any real 1-second window and the mean per
//     value and second after the first.
//
// Usage, from engine/benchmarks:
//
//	go run ./accuracy [-duration 5s]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/benchmarks"
)

const (
	// callers is how many goroutines hammer Entry at once.
	callers = 2
	// threshold is the rules' passes per statInterval.
	threshold = 100
	// statIntervalMs is the rules' statistic interval.
	statIntervalMs = 1000
	// maxQueueingTimeMs is the longest wait the throttling rules hand out.
	maxQueueingTimeMs = 500
	// second is one second in microseconds, the unit of the timestamps.
	second = int64(time.Second / time.Microsecond)
)

// passes are when the calls that passed began and returned, in
// microseconds since the start of a run: each pass was decided in between.
type passes struct{ begun, returned []int64 }

// timed calls try and adds its times to p if it passed.
func (p *passes) timed(try func() bool, start time.Time) {
	begun := time.Since(start).Microseconds()
	if try() {
		p.begun = append(p.begun, begun)
		p.returned = append(p.returned, time.Since(start).Microseconds())
	}
}

// add appends q's passes to p.
func (p *passes) add(q passes) {
	p.begun = append(p.begun, q.begun...)
	p.returned = append(p.returned, q.returned...)
}

// sort sorts both lists, which the figures read sorted.
func (p *passes) sort() {
	slices.Sort(p.begun)
	slices.Sort(p.returned)
}

// shape is a way of sending calls to an engine: drive calls try (one call,
// ended at once; true if it passed) for d and returns the passes, sorted.
type shape struct {
	name  string
	drive func(try func() bool, d time.Duration) passes
}

var shapes = []shape{
	{fmt.Sprintf("hammer, %d goroutines", callers), hammer},
	pacedAt(1.05), pacedAt(1.2), pacedAt(2), pacedAt(10),
}

func main() {
	duration := flag.Duration("duration", 5*time.Second, "how long each engine is driven per rule and shape")
	flag.Parse()
	if *duration < 2*time.Second {
		fmt.Fprintln(os.Stderr, "accuracy: -duration must be at least 2s")
		os.Exit(2)
	}
	if err := run(*duration); err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
}

// run measures both engines for d on each rule and shape and prints the
// two tables.
func run(d time.Duration) error {
	dir, err := os.MkdirTemp("", "sluice-accuracy-sentinel-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := benchmarks.InitSentinel(dir); err != nil {
		return fmt.Errorf("init sentinel-golang: %w", err)
	}

	fmt.Printf("%v per engine, rule and shape, GOMAXPROCS %d\n\n", d, runtime.GOMAXPROCS(0))
	fmt.Printf("reject: threshold %d per %d ms\n", threshold, statIntervalMs)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\tsluice\t\t\tsentinel-golang\t\t\t")
	fmt.Fprintln(w, "shape\tmost in a real 1 s\tfirst second\tmean per second after it\tmost in a real 1 s\tfirst second\tmean per second after it\t")
	for i, s := range shapes {
		resource := fmt.Sprintf("accuracy-reject-%d", i)
		sluice, err := sluiceRun(engine.FlowRule{
			Name: resource, Resource: resource, Threshold: threshold,
			StatIntervalMs: statIntervalMs, ControlBehavior: engine.BehaviorReject,
		}, s, d)
		if err != nil {
			return err
		}
		sentinel, err := sentinelRun(&flow.Rule{
			Resource: resource, TokenCalculateStrategy: flow.Direct, ControlBehavior: flow.Reject,
			Threshold: threshold, StatIntervalInMs: statIntervalMs,
		}, s, d)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\t%s%s\t\n", s.name, rejectFigures(sluice, d), rejectFigures(sentinel, d))
	}
	if err := w.Flush(); err != nil {
		return err
	}

	sluiceThrottle, err := sluiceRun(engine.FlowRule{
		Name: "accuracy-throttling", Resource: "accuracy-throttling", Threshold: threshold,
		StatIntervalMs: statIntervalMs, ControlBehavior: engine.BehaviorThrottling, MaxQueueingTimeMs: maxQueueingTimeMs,
	}, shapes[0], d)
	if err != nil {
		return err
	}
	sentinelThrottle, err := sentinelRun(&flow.Rule{
		Resource: "accuracy-throttling", TokenCalculateStrategy: flow.Direct, ControlBehavior: flow.Throttling,
		Threshold: threshold, StatIntervalInMs: statIntervalMs, MaxQueueingTimeMs: maxQueueingTimeMs,
	}, shapes[0], d)
	if err != nil {
		return err
	}
	fmt.Printf("\nthrottling: threshold %d per %d ms, maxQueueingTimeMs %d, %s\n", threshold, statIntervalMs, maxQueueingTimeMs, shapes[0].name)
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "engine\tpasses\tmean spacing\tsmallest spacing\t")
	for _, r := range []struct {
		name   string
		passes passes
	}{{"sluice", sluiceThrottle}, {"sentinel-golang", sentinelThrottle}} {
		mean, smallest := spacing(r.passes.returned)
		fmt.Fprintf(w, "%s\t%d\t%.3f ms\t%.3f ms\t\n", r.name, len(r.passes.returned), mean, smallest)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return runHotspot(d)
}

// Hotspot figures: values distinct values of a parameter, each limited to
// perValue passes per second.
const (
	values   = 100
	perValue = 10
)

// runHotspot measures both engines' hotspot rules for d and prints their
// table.
func runHotspot(d time.Duration) error {
	eng := engine.New(engine.Options{})
	defer eng.Close()
	err := eng.LoadHotspotRules([]engine.HotspotRule{{Name: "accuracy-hotspot", Resource: "accuracy-hotspot", ParamKey: "user", Threshold: perValue}})
	if err != nil {
		return err
	}
	r := eng.Resource("accuracy-hotspot")
	sluice := hammerValues(func(value string) bool {
		en, blk := r.Entry(engine.WithParam("user", value))
		if blk != nil {
			return false
		}
		en.Exit()
		return true
	}, d)
	_, err = hotspot.LoadRules([]*hotspot.Rule{{Resource: "accuracy-hotspot", MetricType: hotspot.QPS, ControlBehavior: hotspot.Reject,
		ParamIndex: 0, Threshold: perValue, DurationInSec: 1, ParamsMaxCapacity: 10_000}})
	if err != nil {
		return err
	}
	inbound := api.WithTrafficType(base.Inbound)
	sentinel := hammerValues(func(value string) bool {
		en, blk := api.Entry("accuracy-hotspot", inbound, api.WithArgs(value))
		if blk != nil {
			return false
		}
		en.Exit()
		return true
	}, d)
	fmt.Printf("\nhotspot: threshold %d per %d ms per value, %d values hammered by %d goroutines\n", perValue, statIntervalMs, values, callers)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "engine\tmost of a value in a real 1 s\tmean per value and second after the first\t")
	for _, e := range []struct {
		name   string
		passes []passes
	}{{"sluice", sluice}, {"sentinel-golang", sentinel}} {
		most, after := 0, 0
		for _, p := range e.passes {
			most = max(most, mostInWindow(p, second))
			after += len(p.returned) - countBefore(p.returned, second)
		}
		fmt.Fprintf(w, "%s\t%d\t%.1f\t\n", e.name, most, float64(after)/values/(d.Seconds()-1))
	}
	return w.Flush()
}

// hammerValues calls try on each of the values in turn from callers
// goroutines without pause for d and returns, by value, the passes, sorted.
func hammerValues(try func(value string) bool, d time.Duration) []passes {
	names := make([]string, values)
	for i := range names {
		names[i] = fmt.Sprintf("user-%d", i)
	}
	start := time.Now()
	var (
		mu      sync.Mutex
		byValue = make([]passes, values)
		wg      sync.WaitGroup
	)
	for c := range callers {
		wg.Go(func() {
			mine := make([]passes, values)
			for i := c; time.Since(start) < d; i++ {
				v := i % values
				mine[v].timed(func() bool { return try(names[v]) }, start)
			}
			mu.Lock()
			for v := range byValue {
				byValue[v].add(mine[v])
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for v := range byValue {
		byValue[v].sort()
	}
	return byValue
}

// rejectFigures formats one engine's columns of the reject table.
func rejectFigures(p passes, d time.Duration) string {
	first := countBefore(p.returned, second)
	mean := float64(len(p.returned)-first) / (d.Seconds() - 1)
	return fmt.Sprintf("%d\t%d\t%.1f\t", mostInWindow(p, second), first, mean)
}

// sluiceRun loads rule into a new Sluice engine and drives Entry by name on
// its resource with s for d.
func sluiceRun(rule engine.FlowRule, s shape, d time.Duration) (passes, error) {
	eng := engine.New(engine.Options{})
	defer eng.Close()
	if err := eng.LoadFlowRules([]engine.FlowRule{rule}); err != nil {
		return passes{}, err
	}
	return s.drive(func() bool {
		en, blk := eng.Entry(rule.Resource)
		if blk != nil {
			return false
		}
		en.Exit()
		return true
	}, d), nil
}

// sentinelRun makes rule sentinel-golang's only flow rule and drives
// api.Entry on its resource, as inbound traffic, with s for d.
func sentinelRun(rule *flow.Rule, s shape, d time.Duration) (passes, error) {
	if _, err := flow.LoadRules([]*flow.Rule{rule}); err != nil {
		return passes{}, err
	}
	inbound := api.WithTrafficType(base.Inbound)
	return s.drive(func() bool {
		en, blk := api.Entry(rule.Resource, inbound)
		if blk != nil {
			return false
		}
		en.Exit()
		return true
	}, d), nil
}

// hammer calls try from callers goroutines without pause for d.
func hammer(try func() bool, d time.Duration) passes {
	start := time.Now()
	var (
		mu  sync.Mutex
		all passes
		wg  sync.WaitGroup
	)
	for range callers {
		wg.Go(func() {
			var mine passes
			for time.Since(start) < d {
				mine.timed(try, start)
			}
			mu.Lock()
			all.add(mine)
			mu.Unlock()
		})
	}
	wg.Wait()
	all.sort()
	return all
}

// pacedAt is one goroutine calling at times the threshold per second,
// evenly spaced: call j is due j/(times·threshold) s after the start, made
// at once if the loop is late, never skipped.
func pacedAt(times float64) shape {
	perSecond := times * threshold
	return shape{
		name: fmt.Sprintf("paced %g/s (×%g)", perSecond, times),
		drive: func(try func() bool, d time.Duration) passes {
			start := time.Now()
			var p passes
			for j := 0; ; j++ {
				due := time.Duration(float64(j) * float64(time.Second) / perSecond)
				if due >= d {
					return p
				}
				if wait := due - time.Since(start); wait > 0 {
					time.Sleep(wait)
				}
				p.timed(try, start)
			}
		},
	}
}

// mostInWindow returns the most passes of p, sorted, surely decided within
// one window (t-width, t]: begun after its start and returned by its end,
// the window ending at every return in turn. A call that began by t-width
// returned before t: none lasts a second.
func mostInWindow(p passes, width int64) int {
	most, begunBefore := 0, 0
	for i, t := range p.returned {
		for begunBefore < len(p.begun) && p.begun[begunBefore] <= t-width {
			begunBefore++
		}
		most = max(most, i+1-begunBefore)
	}
	return most
}

// countBefore returns how many timestamps of sorted are below limit.
func countBefore(sorted []int64, limit int64) int {
	n, _ := slices.BinarySearch(sorted, limit)
	return n
}

// spacing returns the mean and the smallest gap between consecutive
// timestamps of sorted, in milliseconds; zeros if there are fewer than two.
func spacing(sorted []int64) (mean, smallest float64) {
	if len(sorted) < 2 {
		return 0, 0
	}
	least := sorted[1] - sorted[0]
	for i := 2; i < len(sorted); i++ {
		least = min(least, sorted[i]-sorted[i-1])
	}
	mean = float64(sorted[len(sorted)-1]-sorted[0]) / float64(len(sorted)-1) / 1000
	return mean, float64(least) / 1000
}
