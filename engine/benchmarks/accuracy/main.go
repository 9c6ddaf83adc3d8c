// Command accuracy measures, on the wall clock, how closely Sluice and
// sentinel-golang hold a rule of 100 passes per second, one engine after the
// other in the same process. These are ENGINE.md's accuracy figures:
//
//   - reject: a QPS reject rule (threshold 100, statIntervalMs 1000) under
//     traffic of several shapes: hammered by two goroutines, and evenly
//     paced by one goroutine at 1.05, 1.2, 2 and 10 times the threshold
//     (calls on schedule, each made at once if the loop is late). Every pass
//     is timestamped with time.Now() to the microsecond; the report gives,
//     per shape and engine side by side, the most passes in any real
//     1-second window (sliding over the timestamps, the first second
//     included), the passes in the first second, and the mean per second
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

// shape is a way of sending calls to an engine: drive calls try (one call,
// ended at once; true if it passed) for d and returns the time of every
// pass, in microseconds since the start, sorted.
type shape struct {
	name  string
	drive func(try func() bool, d time.Duration) []int64
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
	fmt.Fprintln(w, "shape\tmax in any 1 s\tfirst second\tmean per second after it\tmax in any 1 s\tfirst second\tmean per second after it\t")
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
		passes []int64
	}{{"sluice", sluiceThrottle}, {"sentinel-golang", sentinelThrottle}} {
		mean, smallest := spacing(r.passes)
		fmt.Fprintf(w, "%s\t%d\t%.3f ms\t%.3f ms\t\n", r.name, len(r.passes), mean, smallest)
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
	fmt.Fprintln(w, "engine\tmax of a value in any 1 s\tmean per value and second after the first\t")
	for _, e := range []struct {
		name   string
		passes [][]int64
	}{{"sluice", sluice}, {"sentinel-golang", sentinel}} {
		most, after := 0, 0
		for _, p := range e.passes {
			most = max(most, maxInWindow(p, second))
			after += len(p) - countBefore(p, second)
		}
		fmt.Fprintf(w, "%s\t%d\t%.1f\t\n", e.name, most, float64(after)/values/(d.Seconds()-1))
	}
	return w.Flush()
}

// hammerValues calls try on each of the values in turn from callers
// goroutines without pause for d and returns, by value, the time of every
// pass in microseconds since the start, sorted.
func hammerValues(try func(value string) bool, d time.Duration) [][]int64 {
	names := make([]string, values)
	for i := range names {
		names[i] = fmt.Sprintf("user-%d", i)
	}
	start := time.Now()
	var (
		mu     sync.Mutex
		passes = make([][]int64, values)
		wg     sync.WaitGroup
	)
	for c := range callers {
		wg.Go(func() {
			mine := make([][]int64, values)
			for i := c; time.Since(start) < d; i++ {
				if v := i % values; try(names[v]) {
					mine[v] = append(mine[v], time.Since(start).Microseconds())
				}
			}
			mu.Lock()
			for v := range passes {
				passes[v] = append(passes[v], mine[v]...)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, p := range passes {
		slices.Sort(p)
	}
	return passes
}

// rejectFigures formats one engine's columns of the reject table.
func rejectFigures(passes []int64, d time.Duration) string {
	first := countBefore(passes, second)
	mean := float64(len(passes)-first) / (d.Seconds() - 1)
	return fmt.Sprintf("%d\t%d\t%.1f\t", maxInWindow(passes, second), first, mean)
}

// sluiceRun loads rule into a new Sluice engine and drives Entry by name on
// its resource with s for d.
func sluiceRun(rule engine.FlowRule, s shape, d time.Duration) ([]int64, error) {
	eng := engine.New(engine.Options{})
	defer eng.Close()
	if err := eng.LoadFlowRules([]engine.FlowRule{rule}); err != nil {
		return nil, err
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
func sentinelRun(rule *flow.Rule, s shape, d time.Duration) ([]int64, error) {
	if _, err := flow.LoadRules([]*flow.Rule{rule}); err != nil {
		return nil, err
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
func hammer(try func() bool, d time.Duration) []int64 {
	start := time.Now()
	var (
		mu     sync.Mutex
		passes []int64
		wg     sync.WaitGroup
	)
	for range callers {
		wg.Go(func() {
			var mine []int64
			for time.Since(start) < d {
				if try() {
					mine = append(mine, time.Since(start).Microseconds())
				}
			}
			mu.Lock()
			passes = append(passes, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(passes)
	return passes
}

// pacedAt is one goroutine calling at times the threshold per second,
// evenly spaced: call j is due j/(times·threshold) s after the start, made
// at once if the loop is late, never skipped.
func pacedAt(times float64) shape {
	perSecond := times * threshold
	return shape{
		name: fmt.Sprintf("paced %g/s (×%g)", perSecond, times),
		drive: func(try func() bool, d time.Duration) []int64 {
			start := time.Now()
			var passes []int64
			for j := 0; ; j++ {
				due := time.Duration(float64(j) * float64(time.Second) / perSecond)
				if due >= d {
					return passes
				}
				if wait := due - time.Since(start); wait > 0 {
					time.Sleep(wait)
				}
				if try() {
					passes = append(passes, time.Since(start).Microseconds())
				}
			}
		},
	}
}

// maxInWindow returns the most timestamps of sorted that fit in any
// half-open window [t, t+width), sliding the window over every timestamp.
func maxInWindow(sorted []int64, width int64) int {
	most, first := 0, 0
	for last, t := range sorted {
		for t-sorted[first] >= width {
			first++
		}
		most = max(most, last-first+1)
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
