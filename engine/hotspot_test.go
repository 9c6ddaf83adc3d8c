package engine

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// newHotspotEngine returns an engine on a manual clock at 0 with hotspot
// rules loaded.
func newHotspotEngine(t testing.TB, rules ...HotspotRule) (*Engine, *ManualClock) {
	t.Helper()
	e, clock := newTestEngine(t, 0)
	if err := e.LoadHotspotRules(rules); err != nil {
		t.Fatal(err)
	}
	return e, clock
}

// TestHotspotHoldsThresholdPerValue is the reject matrix per value: two
// values sent the same traffic, bursts ending on bucket edges and hammers
// included; no window of the interval holds more than the threshold
// passes of either value, and each value gets its threshold.
func TestHotspotHoldsThresholdPerValue(t *testing.T) {
	shapes := []arrivals{paced("paced ×2", 2, 1), paced("paced ×1.05", 21, 20), bursty, {name: "hammer", hammer: true}}
	for _, intervalMs := range []int64{100, 1000} {
		for _, threshold := range []int64{1, 10, 100} {
			for _, shape := range shapes {
				t.Run(fmt.Sprintf("%s/T=%d/I=%dms", shape.name, threshold, intervalMs), func(t *testing.T) {
					t.Parallel()
					e, clock := newHotspotEngine(t, HotspotRule{Name: "per-user", Resource: "r", ParamKey: "user",
						Threshold: float64(threshold), StatIntervalMs: intervalMs})
					r := e.Resource("r")
					passes := map[string][]int64{}
					for ms := range matrixIntervals * intervalMs {
						calls := int64(1 << 62)
						if shape.hammer && ms%max(intervalMs/1000, 1) != 0 {
							continue
						}
						if !shape.hammer {
							if calls = shape.calls(ms, threshold, intervalMs); calls == 0 {
								continue
							}
						}
						clock.Set(ms)
						for _, user := range []string{"ann", "bob"} {
							for range calls {
								if !tryPass(r, WithParam("user", user)) {
									break
								}
								passes[user] = append(passes[user], ms)
							}
						}
					}
					for user, times := range passes {
						if worst := maxInAnyWindow(times, intervalMs); worst > int(threshold) {
							t.Errorf("%s: a window of %d ms held %d passes, over %d", user, intervalMs, worst, threshold)
						}
						if mean := float64(len(times)) / matrixIntervals; mean < 0.5*float64(threshold) {
							t.Errorf("%s: %.1f passes per interval for a threshold of %d", user, mean, threshold)
						}
					}
				})
			}
		}
	}
}

// TestHotspotValues: specific items have their own threshold, values are
// limited apart, and a call without the parameter is not limited.
func TestHotspotValues(t *testing.T) {
	e, clock := newHotspotEngine(t, HotspotRule{Name: "per-user", Resource: "r", ParamKey: "user", Threshold: 2,
		SpecificItems: map[string]float64{"vip": 5, "banned": 0}})
	r := e.Resource("r")
	count := func(opts ...EntryOption) int {
		n := 0
		for range 10 {
			if tryPass(r, opts...) {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		name string
		opts []EntryOption
		want int
	}{
		{"ann", []EntryOption{WithParam("user", "ann")}, 2},
		{"bob", []EntryOption{WithParam("user", "bob")}, 2},
		{"vip", []EntryOption{WithParam("user", "vip")}, 5},
		{"banned", []EntryOption{WithParam("user", "banned")}, 0},
		{"another key", []EntryOption{WithParam("ip", "ann")}, 10},
		{"no param", nil, 10},
	} {
		if got := count(tc.opts...); got != tc.want {
			t.Errorf("%s: %d passes, want %d", tc.name, got, tc.want)
		}
	}
	if _, blk := r.Entry(WithParam("user", "ann")); blk == nil || blk.Reason() != ReasonHotspot || blk.Rule() != "per-user" {
		t.Fatalf("block %v, want hotspot per-user", blk)
	}
	clock.Set(1000)
	if !tryPass(r, WithParam("user", "ann")) {
		t.Fatal("ann blocked a whole interval later")
	}
}

// TestHotspotBurst: a value takes threshold+burstCount at once, then
// threshold per interval.
func TestHotspotBurst(t *testing.T) {
	e, clock := newHotspotEngine(t, HotspotRule{Resource: "r", ParamKey: "k", Threshold: 2, BurstCount: 3})
	r := e.Resource("r")
	passes := 0
	for range 10 {
		if tryPass(r, WithParam("k", "v")) {
			passes++
		}
	}
	if passes != 5 {
		t.Fatalf("%d passes at once, want threshold 2 + burst 3", passes)
	}
	clock.Set(499)
	if tryPass(r, WithParam("k", "v")) {
		t.Fatal("a token came back before half the interval")
	}
	clock.Set(500)
	if !tryPass(r, WithParam("k", "v")) || tryPass(r, WithParam("k", "v")) {
		t.Fatal("want exactly one token back after half the interval")
	}
	clock.Set(10_000)
	passes = 0
	for range 10 {
		if tryPass(r, WithParam("k", "v")) {
			passes++
		}
	}
	if passes != 5 {
		t.Fatalf("after idling, %d passes at once, want 5", passes)
	}
}

// TestHotspotThrottling spaces each value's passes on its own, bursts
// included (sentinel-golang#593 lets them through).
func TestHotspotThrottling(t *testing.T) {
	e, clock := newHotspotEngine(t, HotspotRule{Resource: "r", ParamKey: "k", Threshold: 10,
		ControlBehavior: BehaviorThrottling, MaxQueueingTimeMs: 150})
	r := e.Resource("r")
	clock.Set(1000)
	for _, want := range []int64{0, 100} {
		en, blk := r.Entry(WithParam("k", "a"), WithNoWait())
		if blk != nil || en.WaitMs() != want {
			t.Fatalf("wait %d (%v), want %d", en.WaitMs(), blk, want)
		}
	}
	if _, blk := r.Entry(WithParam("k", "a"), WithNoWait()); blk == nil {
		t.Fatal("a burst got past the queue's limit")
	}
	if en, blk := r.Entry(WithParam("k", "b"), WithNoWait()); blk != nil || en.WaitMs() != 0 {
		t.Fatal("another value waits for the first one's queue")
	}
}

// TestHotspotConcurrency limits each value's calls in flight until Exit.
func TestHotspotConcurrency(t *testing.T) {
	e, _ := newHotspotEngine(t, HotspotRule{Resource: "r", ParamKey: "k", Metric: MetricConcurrency, Threshold: 1})
	r := e.Resource("r")
	a, blk := r.Entry(WithParam("k", "a"))
	if blk != nil || !a.NeedsExit() {
		t.Fatalf("first call: %v, needs exit %v", blk, a.NeedsExit())
	}
	if _, blk := r.Entry(WithParam("k", "a")); blk == nil {
		t.Fatal("a second call of a in flight passed")
	}
	b, blk := r.Entry(WithParam("k", "b"))
	if blk != nil {
		t.Fatal("b is limited by a's calls")
	}
	a.Exit()
	b.Release()
	if !tryPass(r, WithParam("k", "a")) || !tryPass(r, WithParam("k", "b")) {
		t.Fatal("exit did not free the values")
	}
}

// TestHotspotCapacity: the values tracked stay within paramsMaxCapacity;
// a value in use survives a stream of values seen once, and one with
// calls in flight is never forgotten. Values keep 32 bits of their last
// use: the test runs from 0 and from a time whose low 32 bits read as
// negative, as half of the wall clock's do.
func TestHotspotCapacity(t *testing.T) {
	for _, startMs := range []int64{0, 1<<32 + 1<<31 + 5} {
		t.Run(strconv.FormatInt(startMs, 10), func(t *testing.T) {
			hotspotCapacity(t, startMs)
		})
	}
}

// hotspotCapacity runs TestHotspotCapacity from startMs.
func hotspotCapacity(t *testing.T, startMs int64) {
	e, clock := newHotspotEngine(t,
		HotspotRule{Name: "qps", Resource: "r", ParamKey: "k", Threshold: 1, ParamsMaxCapacity: 8},
		HotspotRule{Name: "conc", Resource: "c", ParamKey: "k", Metric: MetricConcurrency, Threshold: 1, ParamsMaxCapacity: 8})
	clock.Set(startMs)
	r, c := e.Resource("r"), e.Resource("c")
	tryPass(r, WithParam("k", "hot"))
	held, blk := c.Entry(WithParam("k", "held"))
	if blk != nil {
		t.Fatal(blk)
	}
	for i := range 1000 {
		clock.Advance(1)
		tryPass(r, WithParam("k", "hot")) // blocked, but used
		tryPass(r, WithParam("k", "cold-"+strconv.Itoa(i)))
		tryPass(c, WithParam("k", "cold-"+strconv.Itoa(i)))
		if i%100 == 0 {
			clock.Advance(1000) // hot's pass leaves the window: it passes again
		}
	}
	for _, res := range []*Resource{r, c} {
		if n := res.rules.Load().hotspot()[0].values.len(); n > 8 {
			t.Errorf("%s tracks %d values, capacity 8", res.Name(), n)
		}
	}
	if tryPass(r, WithParam("k", "hot")) {
		t.Error("the hot value's pass was forgotten")
	}
	if tryPass(c, WithParam("k", "held")) {
		t.Error("the value in flight was forgotten")
	}
	held.Exit()
}

// TestHotspotRuleValidation names the bad fields.
func TestHotspotRuleValidation(t *testing.T) {
	for _, tc := range []struct {
		rule  HotspotRule
		field string
	}{
		{HotspotRule{Resource: "r", Threshold: 1}, "paramKey"},
		{HotspotRule{Resource: "r", ParamKey: "k", Threshold: -1}, "threshold"},
		{HotspotRule{Resource: "r", ParamKey: "k", Threshold: 1.5, Metric: MetricConcurrency}, "threshold"},
		{HotspotRule{Resource: "r", ParamKey: "k", Threshold: 1, BurstCount: 1, ControlBehavior: BehaviorThrottling}, "burstCount"},
		{HotspotRule{Resource: "r", ParamKey: "k", Threshold: 1, MaxQueueingTimeMs: 5}, "maxQueueingTimeMs"},
		{HotspotRule{Resource: "r", ParamKey: "k", Threshold: 1, ParamsMaxCapacity: MaxParamsMaxCapacity + 1}, "paramsMaxCapacity"},
		{HotspotRule{Resource: "r", ParamKey: "k", Threshold: 1, SpecificItems: map[string]float64{"a": -1}}, "specificItems"},
		{HotspotRule{Resource: "r", ParamKey: "k", Threshold: 1, Metric: MetricConcurrency, StatIntervalMs: 1000}, "statIntervalMs"},
	} {
		errs := tc.rule.Validate()
		if len(errs) != 1 || errs[0].Field != tc.field {
			t.Errorf("%+v: %v, want one error on %s", tc.rule, errs, tc.field)
		}
	}
}

// TestHotspotReloadKeepsValues: loading an equal rule again keeps its
// values' statistics; ResourceRules loads hotspot rules too.
func TestHotspotReloadKeepsValues(t *testing.T) {
	rule := HotspotRule{Name: "h", Resource: "r", ParamKey: "k", Threshold: 1, SpecificItems: map[string]float64{"x": 3}}
	e, _ := newHotspotEngine(t, rule)
	r := e.Resource("r")
	tryPass(r, WithParam("k", "v"))
	if err := e.LoadResourceRules(ResourceRules{Resources: []string{"r"}, Hotspot: []HotspotRule{rule}}); err != nil {
		t.Fatal(err)
	}
	if tryPass(r, WithParam("k", "v")) {
		t.Fatal("the reload forgot the value's pass")
	}
	if got := e.HotspotRules(); len(got) != 1 || got[0].ParamsMaxCapacity != DefaultParamsMaxCapacity {
		t.Fatalf("rules %+v", got)
	}
	if err := e.LoadHotspotRules(nil); err != nil {
		t.Fatal(err)
	}
	if !tryPass(r, WithParam("k", "v")) {
		t.Fatal("a removed rule still blocks")
	}
}

// heapPerHotspotValue sends one call for each of n values of a hotspot
// rule (threshold 10 per second) and returns the heap they take, per
// value.
func heapPerHotspotValue(t testing.TB, n int) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e, _ := newHotspotEngine(t, HotspotRule{Name: "per-user", Resource: "r", ParamKey: "user", Threshold: 10, ParamsMaxCapacity: int64(n)})
	r := e.Resource("r")
	for i := range n {
		if !tryPass(r, WithParam("user", "user-"+strconv.Itoa(i))) {
			t.Fatal("blocked")
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(e)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// TestHotspotMemoryPerValue measures docs/engine.md's figure, the heap per
// tracked value with 1,000,000 values (target: 150 bytes), and guards it
// near what a value (64 bytes), its words (its key and its log's ring of
// marks, 64 at threshold 10) and its slot (about 17) take now, about 145.
func TestHotspotMemoryPerValue(t *testing.T) {
	perValue := heapPerHotspotValue(t, 1_000_000)
	t.Logf("heap per tracked value: %.0f bytes", perValue)
	if perValue > 150 {
		t.Fatalf("heap per tracked value %.0f bytes, want <= 150", perValue)
	}
}

// TestStressKeyedRules runs Entry and Exit from many goroutines on keyed
// rules whose tables are small enough to evict and rebuild all along, while
// time moves and the rules expire and are loaded again (run it with
// -race). No item ever has more calls in flight than its threshold, and
// afterwards no value holds a call in flight.
func TestStressKeyedRules(t *testing.T) {
	e, clock := newTestEngine(t, 0, FlowRule{Name: "per-origin", Resource: "r", Metric: MetricConcurrency, Threshold: 2, LimitApp: LimitAppOther})
	load := func(expiresAtMs int64) {
		err := e.LoadHotspotRules([]HotspotRule{
			{Name: "qps", Resource: "r", ParamKey: "user", Threshold: 5, ParamsMaxCapacity: 100, ExpiresAtMs: expiresAtMs},
			{Name: "conc", Resource: "r", ParamKey: "item", Metric: MetricConcurrency, Threshold: 1, ParamsMaxCapacity: 100},
		})
		if err != nil {
			t.Error(err)
		}
	}
	load(0)
	r := e.Resource("r")
	const workers, callsPerWorker = 8, 5000
	var over atomic.Int64
	var inFlight [150]atomic.Int64 // by item, as the callers count them
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range callsPerWorker {
				if w == 0 && i%500 == 0 {
					clock.Advance(100)
					load(clock.NowMs() + 300)
				}
				item := (i + w) % 150
				en, blk := r.Entry(WithParam("user", strconv.Itoa(i%300)), WithParam("item", strconv.Itoa(item)), WithOrigin("o"+strconv.Itoa(i%50)))
				if blk != nil {
					continue
				}
				if inFlight[item].Add(1) > 1 {
					over.Add(1)
				}
				inFlight[item].Add(-1)
				en.Exit()
			}
		})
	}
	wg.Wait()
	if n := over.Load(); n > 0 {
		t.Errorf("%d calls found their item's call in flight already", n)
	}
	for _, c := range r.rules.Load().more.keyed {
		for i := range c.values.shards {
			for j := range c.values.shards[i].slots.Load().slots {
				if v := c.values.shards[i].slots.Load().slots[j].Load(); c.concurrency && v != nil && v.state.Load() != 0 {
					t.Errorf("%s: value %q has %d calls in flight after every Exit", c.rule.Name, v.key(), v.state.Load())
				}
			}
		}
	}
}

// TestManyKeyedRules: with two keyed rules, and with more than Entry
// keeps on its stack, each logs its values' passes, and a call that the
// last one blocks takes no room from the others.
func TestManyKeyedRules(t *testing.T) {
	for _, n := range []int{2, 7} {
		t.Run(strconv.Itoa(n)+" rules", func(t *testing.T) {
			var rules []HotspotRule
			for i := range n {
				rules = append(rules, HotspotRule{Name: "h" + strconv.Itoa(i), Resource: "r", ParamKey: "k" + strconv.Itoa(i), Threshold: float64(10 - i)})
			}
			e, clock := newHotspotEngine(t, rules...)
			r := e.Resource("r")
			for i, rule := range rules {
				key := "k" + strconv.Itoa(i)
				if got := passes(r, 20, WithParam(key, "v")); got != int(rule.Threshold) {
					t.Errorf("%s: %d passes, want %v", rule.Name, got, rule.Threshold)
				}
				if _, blk := r.Entry(WithParam(key, "v")); blk == nil || blk.Rule() != rule.Name {
					t.Errorf("%s: block %v", rule.Name, blk)
				}
			}
			clock.Set(1000)
			all := make([]EntryOption, len(rules))
			for i := range rules {
				all[i] = WithParam("k"+strconv.Itoa(i), "w")
			}
			least := 10 - (n - 1)
			if got := passes(r, 20, all...); got != least {
				t.Errorf("with every key: %d passes, want the least threshold, %d", got, least)
			}
			for i := range rules {
				if got := passes(r, 20, WithParam("k"+strconv.Itoa(i), "w")); got != 10-i-least {
					t.Errorf("k%d after the calls with every key: %d passes, want %d", i, got, 10-i-least)
				}
			}
		})
	}
}
