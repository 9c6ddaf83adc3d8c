package engine

import (
	"math/rand/v2"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"unsafe"
)

// hotValuesOf returns the hot values of r's only hotspot rule.
func hotValuesOf(t *testing.T, r *Resource, n int) HotValues {
	t.Helper()
	all := r.HotValues(n)
	if len(all) != 1 {
		t.Fatalf("HotValues lists %d rules, want 1", len(all))
	}
	return all[0]
}

// TestHotValuesRankSkewedTraffic: over ten seconds of skewed traffic,
// each kind of hotspot rule ranks its values by passes and by blocks in
// the right order, with exact counts at this rate.
func TestHotValuesRankSkewedTraffic(t *testing.T) {
	// Per second: a 40 calls, b 15, c 6, d 1, one each 25 ms.
	perSecond := []struct {
		value string
		calls int
	}{{"a", 40}, {"b", 15}, {"c", 6}, {"d", 1}}
	tests := []struct {
		name          string
		rule          HotspotRule
		exit          bool
		byPass, byBlk []HotValue
	}{
		{"passes all", HotspotRule{Threshold: 1e9}, true,
			[]HotValue{{"a", 400, 0}, {"b", 150, 0}, {"c", 60, 0}, {"d", 10, 0}}, []HotValue{}},
		{"reject", HotspotRule{Threshold: 10}, true,
			[]HotValue{{"a", 100, 300}, {"b", 100, 50}, {"c", 60, 0}, {"d", 10, 0}},
			[]HotValue{{"a", 100, 300}, {"b", 100, 50}}},
		// A shadow rule lets every call go, so each counts in its window:
		// past the first ten, it would block every call of a and b.
		{"shadow counts what it would block", HotspotRule{Threshold: 10, Mode: ModeShadow}, true,
			[]HotValue{{"c", 60, 0}, {"a", 10, 390}, {"b", 10, 140}, {"d", 10, 0}},
			[]HotValue{{"a", 10, 390}, {"b", 10, 140}}},
		{"concurrency, never exited", HotspotRule{Metric: MetricConcurrency, Threshold: 5}, false,
			[]HotValue{{"a", 5, 395}, {"b", 5, 145}, {"c", 5, 55}, {"d", 5, 5}},
			[]HotValue{{"a", 5, 395}, {"b", 5, 145}, {"c", 5, 55}, {"d", 5, 5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := tt.rule
			rule.Name, rule.Resource, rule.ParamKey = "per-user", "r", "user"
			e, clock := newHotspotEngine(t, rule)
			r := e.Resource("r")
			for ms := range int64(10_000) {
				clock.Set(ms)
				if ms%25 != 0 {
					continue
				}
				for _, v := range perSecond {
					if ms%1000 >= int64(v.calls)*25 {
						continue
					}
					if en, blk := r.Entry(WithParam("user", v.value), WithNoWait()); blk == nil && tt.exit {
						en.Exit()
					}
				}
			}
			got := hotValuesOf(t, r, 10)
			want := HotValues{Rule: "per-user", ParamKey: "user", ByPass: tt.byPass, ByBlock: tt.byBlk}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if top := hotValuesOf(t, r, 2); len(top.ByPass) != 2 || top.ByPass[1] != tt.byPass[1] {
				t.Errorf("top 2 by passes: %+v", top.ByPass)
			}
		})
	}
}

// TestHotValuesAgeOut: a value counts while its slice is within the last
// minute (50 to 60 s, by slices of 10 s), and not after.
func TestHotValuesAgeOut(t *testing.T) {
	e, clock := newHotspotEngine(t, HotspotRule{Name: "per-user", Resource: "r", ParamKey: "user", Threshold: 1e9})
	r := e.Resource("r")
	clock.Set(5_000)
	tryPass(r, WithParam("user", "old"))
	clock.Set(30_000)
	tryPass(r, WithParam("user", "new"))
	tryPass(r, WithParam("user", "new"))
	tests := []struct {
		atMs int64
		want []HotValue
	}{
		{30_000, []HotValue{{"new", 2, 0}, {"old", 1, 0}}},
		{59_999, []HotValue{{"new", 2, 0}, {"old", 1, 0}}},
		{60_000, []HotValue{{"new", 2, 0}}},
		{89_999, []HotValue{{"new", 2, 0}}},
		{90_000, []HotValue{}},
	}
	for _, tt := range tests {
		clock.Set(tt.atMs)
		if got := hotValuesOf(t, r, 10).ByPass; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("at %d ms: %+v, want %+v", tt.atMs, got, tt.want)
		}
	}
	// The slice of new, reused a minute later, starts empty.
	clock.Set(95_000)
	tryPass(r, WithParam("user", "later"))
	if got := hotValuesOf(t, r, 10).ByPass; !reflect.DeepEqual(got, []HotValue{{"later", 1, 0}}) {
		t.Errorf("at 95 s: %+v", got)
	}
}

// TestHotSketchBoundedWithAMillionValues: a million distinct values
// among three heavy ones fill at most the sketch's counters, take a
// bounded heap, and leave the heavy values ranked first, their counts
// marked approximate and within a quarter (the sampling's error: a few
// percent for the first, more for the third); sampled by random draws,
// and by the draws of the values' pass counts that passes make.
func TestHotSketchBoundedWithAMillionValues(t *testing.T) {
	tests := []struct {
		name        string
		byPassCount bool
	}{{"random draws", false}, {"pass count draws", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hotSketchWithAMillionValues(t, tt.byPassCount)
		})
	}
}

// hotSketchWithAMillionValues runs TestHotSketchBoundedWithAMillionValues,
// each call's draw made from its value's pass count if byPassCount.
func hotSketchWithAMillionValues(t *testing.T, byPassCount bool) {
	heavy := []struct {
		value string
		calls int
	}{{"heavy-1", 300_000}, {"heavy-2", 100_000}, {"heavy-3", 30_000}}
	const distinct = 1_000_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := newHotSketch()
	// Spread over the minute, each call at its own ms: every third call
	// goes to a heavy value until it has its calls, the others to values
	// seen once each.
	total := distinct
	for _, h := range heavy {
		total += h.calls
	}
	sent := make([]int, len(heavy))
	for i := range total {
		nowMs := int64(i) * 59_999 / int64(total)
		value, passes := "", 1
		for j, h := range heavy {
			if i%3 == 0 && sent[j] < h.calls {
				value = h.value
				sent[j]++
				passes = sent[j]
				break
			}
		}
		if value == "" {
			value = "value-" + strconv.Itoa(i)
		}
		draw := rand.Uint64()
		if byPassCount {
			draw = passDraw(int64(passes), nowMs)
		}
		s.record(nowMs, value, 1, false, draw)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	runtime.KeepAlive(s)
	t.Logf("heap grown by the sketch: %d bytes", grown)
	// The sketch holds at most 12 × 64 counters and their values' copies.
	if grown > 256<<10 {
		t.Errorf("heap grew by %d bytes, want at most 256 KiB", grown)
	}
	held, bytes := 0, int(unsafe.Sizeof(*s))
	for i := range s.slices {
		for _, c := range []*spaceSaving{&s.slices[i].pass, &s.slices[i].block} {
			if c.counters != nil {
				bytes += int(unsafe.Sizeof(*c.counters))
			}
			for j := range c.n {
				bytes += len(c.counters[j].value)
			}
			held += c.n
		}
	}
	t.Logf("%d counters held, %d bytes with their values", held, bytes)
	if held > 2*hotSlices*hotCounters || bytes > 64<<10 {
		t.Errorf("%d counters held in %d bytes, want at most %d in 64 KiB", held, bytes, 2*hotSlices*hotCounters)
	}
	byPass, byBlock, approximate := s.top(59_999, 3)
	if !approximate || len(byBlock) != 0 || len(byPass) != 3 {
		t.Fatalf("top 3: %+v, %+v, approximate %v", byPass, byBlock, approximate)
	}
	t.Logf("top 3: %+v", byPass)
	for i, h := range heavy {
		got := byPass[i]
		if got.Value != h.value || got.Pass < int64(h.calls)*3/4 || got.Pass > int64(h.calls)*5/4 {
			t.Errorf("rank %d: %+v, want %s with about %d passes", i+1, got, h.value, h.calls)
		}
	}
}

// TestHotValuesUnderConcurrentCalls: calls on every core and reads at
// the same time neither race nor lose the heavy value.
func TestHotValuesUnderConcurrentCalls(t *testing.T) {
	e, _ := newHotspotEngine(t, HotspotRule{Name: "per-user", Resource: "r", ParamKey: "user", Threshold: 1e9})
	r := e.Resource("r")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 5000 {
				value := "hot"
				if i%4 == 0 {
					value = "cold-" + strconv.Itoa(g) + "-" + strconv.Itoa(i)
				}
				tryPass(r, WithParam("user", value))
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			r.HotValues(10)
		}
	})
	wg.Wait()
	got := hotValuesOf(t, r, 1)
	if len(got.ByPass) != 1 || got.ByPass[0].Value != "hot" {
		t.Errorf("top by passes: %+v, want hot first", got.ByPass)
	}
}

// TestHotValuesOfNothing: a nil resource and one without a hotspot rule
// list no rules; n below 1 ranks no value.
func TestHotValuesOfNothing(t *testing.T) {
	var none *Resource
	if got := none.HotValues(10); got != nil {
		t.Errorf("a nil resource: %+v", got)
	}
	e, _ := newHotspotEngine(t, HotspotRule{Name: "per-user", Resource: "r", ParamKey: "user", Threshold: 0})
	if got := e.Resource("other").HotValues(10); got == nil || len(got) != 0 {
		t.Errorf("a resource without a hotspot rule: %#v, want an empty list", got)
	}
	r := e.Resource("r")
	tryPass(r, WithParam("user", "u"))
	if got := hotValuesOf(t, r, 1); len(got.ByBlock) != 1 || got.ByBlock[0] != (HotValue{"u", 0, 1}) {
		t.Errorf("n 1: %+v", got)
	}
	for _, n := range []int{0, -1} {
		if got := hotValuesOf(t, r, n); len(got.ByPass) != 0 || len(got.ByBlock) != 0 {
			t.Errorf("n %d: %+v", n, got)
		}
	}
}
