package engine

import (
	"errors"
	"reflect"
	"testing"
	"unsafe"
)

// TestResourceLayout: the fields every call reads fill the first cache
// line of a Resource, the counters every call writes the second, and the
// size, 512 bytes, is a size class of whole cache lines with no malloc
// header before them, so that two cores calling at once share only the
// lines they both write.
func TestResourceLayout(t *testing.T) {
	const line = 64
	var r Resource
	if off := unsafe.Offsetof(r.second); off != line {
		t.Errorf("second at offset %d, want %d: the read-mostly fields must fill the first line exactly, and its counters the second", off, line)
	}
	if size := unsafe.Sizeof(r); size != 512 {
		t.Errorf("Resource is %d bytes, want 512: below, its size class may not be a multiple of 64; above, it takes 576 bytes and its lines are off by a malloc header", size)
	}
}

// TestEntryStaysInRegisters: the compiler keeps a struct in registers,
// rather than in the caller's memory, only when it is at most four words
// of at most four fields, each field such a value too (an array of more
// than one element is not). A larger Entry is copied from the call's
// results into the caller's variable with loads wider than the stores
// just made, a stall that cost about a quarter of an Entry+Exit.
func TestEntryStaysInRegisters(t *testing.T) {
	var kept func(reflect.Type) bool
	kept = func(ty reflect.Type) bool {
		switch ty.Kind() {
		case reflect.Struct:
			if ty.NumField() > 4 {
				return false
			}
			for f := range ty.Fields() {
				if !kept(f.Type) {
					return false
				}
			}
		case reflect.Array:
			return ty.Len() <= 1 && kept(ty.Elem())
		}
		return true
	}
	var e Entry
	if size := unsafe.Sizeof(e); size > 4*unsafe.Sizeof(uintptr(0)) || !kept(reflect.TypeOf(e)) {
		t.Errorf("Entry is %d bytes of %d fields, want at most four words of at most four fields", size, reflect.TypeOf(e).NumField())
	}
}

// TestEntryKeepsWhatDoesNotFit: a count too large for the Entry's own
// word is kept with what the call holds, and the entry counts as it
// through Exit and Release; a hotspot value's calls in flight and a
// half-open breaker's probe are held and given back.
func TestEntryKeepsWhatDoesNotFit(t *testing.T) {
	e, clock := newTestEngine(t, 0)
	if err := e.LoadHotspotRules([]HotspotRule{{Name: "conc", Resource: "held", ParamKey: "k", Metric: MetricConcurrency, Threshold: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := e.LoadCircuitBreakerRules([]CircuitBreakerRule{{Resource: "probed", Strategy: StrategyErrorCount, Threshold: 1, MinRequestAmount: 1, RetryTimeoutMs: 1000}}); err != nil {
		t.Fatal(err)
	}
	huge := int64(maxCallCount) + 7
	r := e.Resource("plain")
	for _, end := range []func(Entry){func(en Entry) { en.Exit() }, Entry.Release} {
		en, blk := r.Entry(WithCount(huge))
		if blk != nil {
			t.Fatal(blk)
		}
		if en.held == nil || en.count() != huge || en.WaitMs() != 0 {
			t.Fatalf("a count of %d: held %v, count %d, wait %d", huge, en.held, en.count(), en.WaitMs())
		}
		if n := r.Concurrency(); n != huge {
			t.Fatalf("in flight %d, want %d", n, huge)
		}
		end(en)
		if n := r.Concurrency(); n != 0 {
			t.Fatalf("in flight %d after the entry ended, want 0", n)
		}
	}

	held := e.Resource("held")
	en, blk := held.Entry(WithParam("k", "v"))
	if blk != nil {
		t.Fatal(blk)
	}
	if !en.CountsInFlight() || tryPass(held, WithParam("k", "v")) {
		t.Fatal("the value's call in flight is not held")
	}
	en.Exit()
	if !tryPass(held, WithParam("k", "v")) {
		t.Fatal("the value's call in flight was not given back")
	}

	probed := e.Resource("probed")
	if en, blk := probed.Entry(); blk == nil {
		en.Exit(WithError(errors.New("boom")))
	}
	clock.Advance(1000)
	probe, blk := probed.Entry()
	if blk != nil {
		t.Fatal(blk)
	}
	if !probe.NeedsExit() || probe.CountsInFlight() {
		t.Fatalf("a probe: NeedsExit %v, CountsInFlight %v; want true, false", probe.NeedsExit(), probe.CountsInFlight())
	}
	probe.Exit()
	if st := e.Breakers(); len(st) != 1 || st[0].State != BreakerClosed {
		t.Fatalf("after the probe passed: %+v, want closed", st)
	}
}

// TestCallsInFlightAreDerived: the calls in flight are the passes less
// the completions, so every way a call leaves flight, or completes
// without one, must keep that count: an Exit with another completion
// count, a Release and its outcome reported later, outcomes reported with
// no entry, passes tallied from outside; on a resource without rules, one
// whose flow rule claims its passes, and one whose concurrency rule
// reserves them. The minute's most in flight is exact on a resource
// calls do not contend for.
func TestCallsInFlightAreDerived(t *testing.T) {
	e, _ := newTestEngine(t, 0,
		FlowRule{Name: "qps", Resource: "ruled", Threshold: MaxThreshold},
		FlowRule{Name: "conc", Resource: "conc", Metric: MetricConcurrency, Threshold: 6},
	)
	for _, name := range []string{"plain", "ruled", "conc"} {
		r := e.Resource(name)
		enter := func(count int64) Entry {
			t.Helper()
			en, blk := r.Entry(WithCount(count))
			if blk != nil {
				t.Fatalf("%s: %v", name, blk)
			}
			return en
		}
		check := func(step string, want int64) {
			t.Helper()
			if got := r.Concurrency(); got != want {
				t.Fatalf("%s, %s: %d in flight, want %d", name, step, got, want)
			}
		}
		a, b, c := enter(1), enter(2), enter(3)
		check("three entries of 1, 2 and 3", 6)
		if name == "conc" {
			if _, blk := r.Entry(); blk == nil {
				t.Fatal("conc: a seventh call passed a limit of 6")
			}
			check("a call over the limit", 6)
		}
		b.Exit(WithCompleteCount(5))
		check("the entry of 2 exited as 5 completions", 4)
		c.Exit(WithCompleteCount(1), WithError(errBoom))
		check("the entry of 3 exited as 1 completion", 1)
		a.Release()
		check("the entry of 1 released", 0)
		r.RecordComplete(4, 10, false)
		check("4 outcomes reported", 0)
		r.Tally(true, 3)
		r.Tally(false, 2)
		check("3 passes and 2 blocks tallied", 0)
		d := enter(2)
		check("an entry of 2", 2)
		d.Exit()
		check("every entry exited", 0)
	}
	most := map[string]int64{}
	for _, m := range e.CollectMinutes() {
		most[m.Resource] = max(most[m.Resource], m.MaxConcurrency)
	}
	for _, name := range []string{"plain", "ruled", "conc"} {
		if most[name] != 6 {
			t.Errorf("%s: the minute's most in flight is %d, want 6", name, most[name])
		}
	}
}

// TestNilResourceLetsCallsPass: a nil *Resource, which the engine never
// hands out, lets every call pass uncounted, and its entry's Exit does
// nothing.
func TestNilResourceLetsCallsPass(t *testing.T) {
	var r *Resource
	en, blk := r.Entry(WithCount(3))
	if blk != nil {
		t.Fatalf("a nil resource blocked: %v", blk)
	}
	if en != (Entry{}) {
		t.Fatalf("a nil resource's entry is %+v, want the zero Entry", en)
	}
	en.Exit()
	en.Release()
}

// TestEntryEndedTwice: a second Exit or Release of an entry that holds a
// record does nothing, even once another call holds the record it gave
// back: the other call's value stays in flight until its own end.
func TestEntryEndedTwice(t *testing.T) {
	e, _ := newTestEngine(t, 0)
	if err := e.LoadHotspotRules([]HotspotRule{{Name: "conc", Resource: "held", ParamKey: "k", Metric: MetricConcurrency, Threshold: 1}}); err != nil {
		t.Fatal(err)
	}
	r := e.Resource("held")
	for _, end := range []func(Entry){func(en Entry) { en.Exit() }, Entry.Release} {
		first, blk := r.Entry(WithParam("k", "v"))
		if blk != nil {
			t.Fatal(blk)
		}
		end(first)
		second, blk := r.Entry(WithParam("k", "v"))
		if blk != nil {
			t.Fatal(blk)
		}
		end(first)
		if first.CountsInFlight() || first.NeedsExit() {
			t.Fatal("an ended entry counts in flight")
		}
		if tryPass(r, WithParam("k", "v")) {
			t.Fatal("a second end of the first entry released the second's value")
		}
		if n := r.Concurrency(); n != 1 {
			t.Fatalf("in flight %d, want the second entry's 1", n)
		}
		end(second)
		if !tryPass(r, WithParam("k", "v")) {
			t.Fatal("the second entry's value was not given back")
		}
	}
}
