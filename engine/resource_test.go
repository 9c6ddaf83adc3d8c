package engine

import (
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

// TestEntryFitsInRegisters: Go passes and returns a struct in registers
// only when its fields (arrays of more than one element taking none) fit
// the nine integer registers, with the *BlockError that Entry returns
// beside it. Past that, every Entry and Exit copies the struct through
// memory, which cost about a fifth of an Entry+Exit.
func TestEntryFitsInRegisters(t *testing.T) {
	var words func(reflect.Type) (int, bool)
	words = func(ty reflect.Type) (int, bool) {
		switch ty.Kind() {
		case reflect.Struct:
			n := 0
			for f := range ty.Fields() {
				w, ok := words(f.Type)
				if !ok {
					return 0, false
				}
				n += w
			}
			return n, true
		case reflect.Array:
			if ty.Len() > 1 {
				return 0, false
			}
			return words(ty.Elem())
		case reflect.Pointer, reflect.Int64, reflect.Uint64, reflect.Int, reflect.Bool:
			return 1, true
		}
		t.Fatalf("%s: a kind the test does not count", ty)
		return 0, false
	}
	n, ok := words(reflect.TypeFor[Entry]())
	if !ok || n > 8 {
		t.Errorf("Entry takes %d registers (register-assignable: %v), want at most 8", n, ok)
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
