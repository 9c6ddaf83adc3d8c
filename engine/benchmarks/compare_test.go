package benchmarks_test

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/core/stat"
	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/benchmarks"
)

// resource is the resource every timed benchmark enters.
const resource = "orders"

// never is a QPS threshold no benchmark reaches: the rule is checked on
// every call and lets every call pass.
const never = engine.MaxThreshold

// resources is how many resources the memory benchmark creates.
const resources = 10_000

// trafficRounds is how many calls the memory benchmark sends to each
// resource, so that its statistics are in use, not only allocated.
const trafficRounds = 3

// inbound marks sentinel-golang entries as a server's inbound traffic. It is
// built once so that creating the option is not part of the measured call.
var inbound = api.WithTrafficType(base.Inbound)

// TestMain initialises sentinel-golang once for the whole binary, with its
// log in a temporary directory that is removed afterwards.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run is TestMain without the exit, so that deferred clean-up runs.
func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sluice-benchmarks-sentinel-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := benchmarks.InitSentinel(dir); err != nil {
		fmt.Fprintln(os.Stderr, "init sentinel-golang:", err)
		return 1
	}
	return m.Run()
}

// sluiceRule is a QPS reject rule on resource over a 1-second interval.
func sluiceRule(threshold float64) engine.FlowRule {
	return engine.FlowRule{
		Name:            "orders-qps",
		Resource:        resource,
		Threshold:       threshold,
		StatIntervalMs:  1000,
		ControlBehavior: engine.BehaviorReject,
	}
}

// sentinelRule is sluiceRule for sentinel-golang.
func sentinelRule(threshold float64) *flow.Rule {
	return &flow.Rule{
		Resource:               resource,
		TokenCalculateStrategy: flow.Direct,
		ControlBehavior:        flow.Reject,
		Threshold:              threshold,
		StatIntervalInMs:       1000,
	}
}

// sluiceEngine returns an engine with rules loaded, closed when b ends.
func sluiceEngine(b *testing.B, rules ...engine.FlowRule) *engine.Engine {
	b.Helper()
	eng := engine.New(engine.Options{})
	b.Cleanup(eng.Close)
	if err := eng.LoadFlowRules(rules); err != nil {
		b.Fatal(err)
	}
	return eng
}

// loadSentinelRules makes rules sentinel-golang's only flow rules until b
// ends.
func loadSentinelRules(b *testing.B, rules ...*flow.Rule) {
	b.Helper()
	if _, err := flow.LoadRules(rules); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { clearSentinel(b) })
}

// clearSentinel drops sentinel-golang's flow rules and then its resource
// nodes, in that order: a rule reads the statistics of the node that existed
// when it was loaded.
func clearSentinel(b *testing.B) {
	b.Helper()
	if err := flow.ClearRules(); err != nil {
		b.Fatal(err)
	}
	stat.ResetResourceNodeMap()
}

// BenchmarkEntryExitPass is docs/engine.md's first figure: Entry and Exit on one
// goroutine, with one QPS reject rule that checks every call and lets it
// pass. Sluice is called by name, as sentinel-golang is, and by handle.
func BenchmarkEntryExitPass(b *testing.B) {
	b.Run("engine=sluice", func(b *testing.B) {
		eng := sluiceEngine(b, sluiceRule(never))
		b.ReportAllocs()
		for b.Loop() {
			en, blk := eng.Entry(resource)
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
	})
	b.Run("engine=sluice-handle", func(b *testing.B) {
		r := sluiceEngine(b, sluiceRule(never)).Resource(resource)
		b.ReportAllocs()
		for b.Loop() {
			en, blk := r.Entry()
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
	})
	b.Run("engine=sentinel", func(b *testing.B) {
		loadSentinelRules(b, sentinelRule(never))
		b.ReportAllocs()
		for b.Loop() {
			en, blk := api.Entry(resource, inbound)
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
	})
}

// BenchmarkEntryExitPassParallel is BenchmarkEntryExitPass on every core
// (b.RunParallel), all goroutines entering the same resource.
func BenchmarkEntryExitPassParallel(b *testing.B) {
	b.Run("engine=sluice", func(b *testing.B) {
		eng := sluiceEngine(b, sluiceRule(never))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				en, blk := eng.Entry(resource)
				if blk != nil {
					b.Error(blk)
					return
				}
				en.Exit()
			}
		})
	})
	b.Run("engine=sluice-handle", func(b *testing.B) {
		r := sluiceEngine(b, sluiceRule(never)).Resource(resource)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				en, blk := r.Entry()
				if blk != nil {
					b.Error(blk)
					return
				}
				en.Exit()
			}
		})
	})
	b.Run("engine=sentinel", func(b *testing.B) {
		loadSentinelRules(b, sentinelRule(never))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				en, blk := api.Entry(resource, inbound)
				if blk != nil {
					b.Error(blk)
					return
				}
				en.Exit()
			}
		})
	})
}

// BenchmarkEntryBlocked is an Entry that a QPS reject rule with a threshold
// of 0 blocks. Both engines block every call then: sentinel-golang blocks
// when passes in the window + 1 > threshold.
func BenchmarkEntryBlocked(b *testing.B) {
	b.Run("engine=sluice", func(b *testing.B) {
		eng := sluiceEngine(b, sluiceRule(0))
		b.ReportAllocs()
		for b.Loop() {
			if en, blk := eng.Entry(resource); blk == nil {
				en.Exit()
				b.Fatal("a threshold of 0 let a call pass")
			}
		}
	})
	b.Run("engine=sluice-handle", func(b *testing.B) {
		r := sluiceEngine(b, sluiceRule(0)).Resource(resource)
		b.ReportAllocs()
		for b.Loop() {
			if en, blk := r.Entry(); blk == nil {
				en.Exit()
				b.Fatal("a threshold of 0 let a call pass")
			}
		}
	})
	b.Run("engine=sentinel", func(b *testing.B) {
		loadSentinelRules(b, sentinelRule(0))
		b.ReportAllocs()
		for b.Loop() {
			if en, blk := api.Entry(resource, inbound); blk == nil {
				en.Exit()
				b.Fatal("a threshold of 0 let a call pass")
			}
		}
	})
}

// BenchmarkMemoryPerResource is docs/engine.md's memory figure: 10,000 resources,
// each with one QPS reject rule and a few calls, and the heap they take per
// resource, reported as B/resource. Each iteration builds the whole set from
// nothing and measures it, so ns/op is the cost of one such round (rules,
// traffic and two garbage collections), not of a call.
//
// sentinel-golang's resource limit, base.DefaultMaxResourceAmount (10,000),
// is a constant, not a setting: past it, it logs a warning and still creates
// the resource. Its resource nodes are cleared before each round, so the
// round's 10,000 stay within it, and the benchmark checks that all of them
// are tracked.
func BenchmarkMemoryPerResource(b *testing.B) {
	b.Run("engine=sluice", func(b *testing.B) {
		var sum float64
		rounds := 0
		for b.Loop() {
			sum += sluiceHeapPerResource(b)
			rounds++
		}
		b.ReportMetric(sum/float64(rounds), "B/resource")
	})
	b.Run("engine=sentinel", func(b *testing.B) {
		var sum float64
		rounds := 0
		for b.Loop() {
			sum += sentinelHeapPerResource(b)
			rounds++
		}
		b.ReportMetric(sum/float64(rounds), "B/resource")
	})
}

// sluiceHeapPerResource is one round of BenchmarkMemoryPerResource for
// Sluice.
func sluiceHeapPerResource(b *testing.B) float64 {
	before := heapAfterGC()
	eng := engine.New(engine.Options{})
	defer eng.Close()
	rules := make([]engine.FlowRule, resources)
	for i := range rules {
		rules[i] = engine.FlowRule{
			Name:            fmt.Sprintf("rule-%d", i),
			Resource:        fmt.Sprintf("resource-%d", i),
			Threshold:       100,
			StatIntervalMs:  1000,
			ControlBehavior: engine.BehaviorReject,
		}
	}
	if err := eng.LoadFlowRules(rules); err != nil {
		b.Fatal(err)
	}
	for range trafficRounds {
		for i := range rules {
			en, blk := eng.Entry(rules[i].Resource)
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
	}
	after := heapAfterGC()
	if n := len(eng.Resources()); n != resources {
		b.Fatalf("Sluice tracks %d resources, want %d", n, resources)
	}
	return float64(int64(after)-int64(before)) / resources
}

// sentinelHeapPerResource is one round of BenchmarkMemoryPerResource for
// sentinel-golang, whose state is global: it starts from no rules and no
// resources and leaves none behind.
func sentinelHeapPerResource(b *testing.B) float64 {
	clearSentinel(b)
	defer clearSentinel(b)
	before := heapAfterGC()
	rules := make([]*flow.Rule, resources)
	for i := range rules {
		rules[i] = &flow.Rule{
			Resource:               fmt.Sprintf("resource-%d", i),
			TokenCalculateStrategy: flow.Direct,
			ControlBehavior:        flow.Reject,
			Threshold:              100,
			StatIntervalInMs:       1000,
		}
	}
	if _, err := flow.LoadRules(rules); err != nil {
		b.Fatal(err)
	}
	for range trafficRounds {
		for i := range rules {
			en, blk := api.Entry(rules[i].Resource, inbound)
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
	}
	after := heapAfterGC()
	if n := len(stat.ResourceNodeList()); n != resources {
		b.Fatalf("sentinel-golang tracks %d resources, want %d", n, resources)
	}
	return float64(int64(after)-int64(before)) / resources
}

// heapAfterGC collects garbage and returns the bytes of live heap objects.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkEntryExitFlowAndBreaker is docs/engine.md's third figure: Entry and
// Exit with a QPS rule that never blocks and an error-ratio circuit breaker
// that stays closed (every call succeeds).
func BenchmarkEntryExitFlowAndBreaker(b *testing.B) {
	b.Run("engine=sluice", func(b *testing.B) {
		eng := sluiceEngine(b, sluiceRule(never))
		err := eng.LoadCircuitBreakerRules([]engine.CircuitBreakerRule{{
			Name: "orders-errors", Resource: resource, Strategy: engine.StrategyErrorRatio,
			Threshold: 0.5, RetryTimeoutMs: 1000, MinRequestAmount: 5, StatIntervalMs: 1000,
		}})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			en, blk := eng.Entry(resource)
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
	})
	b.Run("engine=sentinel", func(b *testing.B) {
		loadSentinelRules(b, sentinelRule(never))
		_, err := circuitbreaker.LoadRules([]*circuitbreaker.Rule{{
			Resource: resource, Strategy: circuitbreaker.ErrorRatio, Threshold: 0.5,
			RetryTimeoutMs: 1000, MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 10,
		}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := circuitbreaker.ClearRules(); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportAllocs()
		for b.Loop() {
			en, blk := api.Entry(resource, inbound)
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
	})
}

// hotspotUser is the value every hotspot benchmark's calls carry, tracked
// before the timing starts.
const hotspotUser = "user-0"

// sluiceHotspotEngine returns an engine with one hotspot rule on resource
// that limits each value of "user" and lets every call pass, closed when b
// ends.
func sluiceHotspotEngine(b *testing.B) *engine.Engine {
	b.Helper()
	eng := engine.New(engine.Options{})
	b.Cleanup(eng.Close)
	err := eng.LoadHotspotRules([]engine.HotspotRule{{Name: "per-user", Resource: resource, ParamKey: "user", Threshold: never}})
	if err != nil {
		b.Fatal(err)
	}
	return eng
}

// loadSentinelHotspotRule makes a QPS reject rule on the first argument of
// resource's calls sentinel-golang's only hotspot rule until b ends.
func loadSentinelHotspotRule(b *testing.B) {
	b.Helper()
	_, err := hotspot.LoadRules([]*hotspot.Rule{{
		Resource: resource, MetricType: hotspot.QPS, ControlBehavior: hotspot.Reject, ParamIndex: 0,
		Threshold: 1 << 50, DurationInSec: 1, ParamsMaxCapacity: 100_000,
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := hotspot.ClearRules(); err != nil {
			b.Error(err)
		}
		stat.ResetResourceNodeMap()
	})
}

// BenchmarkHotspotEntryExitPass is docs/engine.md's hotspot figure: Entry and
// Exit with one hotspot rule, the value tracked already, passing; Sluice
// by handle, sentinel-golang with the value as its call's argument.
func BenchmarkHotspotEntryExitPass(b *testing.B) {
	b.Run("engine=sluice-handle", func(b *testing.B) {
		r := sluiceHotspotEngine(b).Resource(resource)
		if en, blk := r.Entry(engine.WithParam("user", hotspotUser)); blk == nil {
			en.Exit() // the value is tracked from now on
		}
		b.ReportAllocs()
		for b.Loop() {
			en, blk := r.Entry(engine.WithParam("user", hotspotUser))
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
	})
	b.Run("engine=sentinel", func(b *testing.B) {
		loadSentinelHotspotRule(b)
		if en, blk := api.Entry(resource, inbound, api.WithArgs(hotspotUser)); blk == nil {
			en.Exit()
		}
		b.ReportAllocs()
		for b.Loop() {
			en, blk := api.Entry(resource, inbound, api.WithArgs(hotspotUser))
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
	})
}

// BenchmarkHotspotEntryExitPassParallel is the same on every core, each
// goroutine with values of its own.
func BenchmarkHotspotEntryExitPassParallel(b *testing.B) {
	const perGoroutine = 1024
	valuesOf := func(g int64) []string {
		values := make([]string, perGoroutine)
		for i := range values {
			values[i] = fmt.Sprintf("user-%d-%d", g, i)
		}
		return values
	}
	b.Run("engine=sluice-handle", func(b *testing.B) {
		r := sluiceHotspotEngine(b).Resource(resource)
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			values, i := valuesOf(next.Add(1)), 0
			for pb.Next() {
				en, blk := r.Entry(engine.WithParam("user", values[i%perGoroutine]))
				if blk != nil {
					b.Error(blk)
					return
				}
				en.Exit()
				i++
			}
		})
	})
	b.Run("engine=sentinel", func(b *testing.B) {
		loadSentinelHotspotRule(b)
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			values, i := valuesOf(next.Add(1)), 0
			for pb.Next() {
				en, blk := api.Entry(resource, inbound, api.WithArgs(values[i%perGoroutine]))
				if blk != nil {
					b.Error(blk)
					return
				}
				en.Exit()
				i++
			}
		})
	})
}

// BenchmarkHotspotHeapPerValue is docs/engine.md's memory figure for hotspot
// rules: the heap that one rule (10 per second per value, room for all
// of them) takes per tracked value once 1,000,000 distinct values made a
// call each, reported as B/value after a collection. Each round tracks
// them afresh in about a second; -benchtime 1x runs one.
func BenchmarkHotspotHeapPerValue(b *testing.B) {
	const values = 1_000_000
	keys := make([]string, values)
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%d", i)
	}
	var perValue float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		eng := engine.New(engine.Options{})
		err := eng.LoadHotspotRules([]engine.HotspotRule{{Name: "per-user", Resource: resource, ParamKey: "user", Threshold: 10, ParamsMaxCapacity: values}})
		if err != nil {
			b.Fatal(err)
		}
		r := eng.Resource(resource)
		for _, key := range keys {
			en, blk := r.Entry(engine.WithParam("user", key))
			if blk != nil {
				b.Fatal(blk)
			}
			en.Exit()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(r)
		eng.Close()
		perValue = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / values
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(perValue, "B/value")
}
