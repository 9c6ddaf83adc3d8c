package metrics

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

func TestBacklogSecondsGapsAndIdle(t *testing.T) {
	b := NewBacklog(10)
	busy := engine.LiveStats{PassQps: 5, BlockQps: 2, CompleteQps: 5, AvgRtMs: 12.5, Concurrency: 3}
	record := func(sec int64, names ...string) {
		b.Record(sec, func(add func(string, engine.LiveStats)) {
			for _, n := range names {
				add(n, busy)
			}
		})
	}
	record(1000, "a")
	record(1001, "a", "b")
	record(1002) // a and b idle
	// 1003 and 1004 are not sampled: the server was down.
	record(1005, "a")

	got := b.Read("", 10)
	if got.FromSec != 1005-BacklogSeconds+1 || got.Seconds != BacklogSeconds || len(got.Resources) != 2 {
		t.Fatalf("read = from %d, %d seconds, %d resources", got.FromSec, got.Seconds, len(got.Resources))
	}
	a := got.Resources[0]
	at := func(sec int64) int { return int(sec - got.FromSec) }
	for sec, want := range map[int64]struct {
		sampled bool
		pass    uint32
	}{999: {false, 0}, 1000: {true, 5}, 1001: {true, 5}, 1002: {true, 0}, 1003: {false, 0}, 1004: {false, 0}, 1005: {true, 5}} {
		if a.Sampled[at(sec)] != want.sampled || a.Pass[at(sec)] != want.pass {
			t.Errorf("a at %d: sampled %v pass %d, want %v %d", sec, a.Sampled[at(sec)], a.Pass[at(sec)], want.sampled, want.pass)
		}
	}
	if !a.HasRt[at(1000)] || a.AvgRtMs[at(1000)] != 12.5 || a.HasRt[at(1002)] || a.Concurrency[at(1001)] != 3 {
		t.Errorf("a's response times or calls in flight are wrong: %+v", a)
	}
	if one := b.Read("b", 10); len(one.Resources) != 1 || one.Resources[0].Name != "b" || one.Resources[0].Block[at(1001)] != 2 {
		t.Errorf("read b = %+v", one.Resources)
	}
	if busiest := b.Read("", 1); len(busiest.Resources) != 1 || busiest.Resources[0].Name != "a" {
		t.Errorf("the busiest resource is %+v, want a", busiest.Resources)
	}

	record(1001+BacklogSeconds, "a")
	if got := b.Read("", 10); len(got.Resources) != 1 || got.Resources[0].Name != "a" {
		t.Errorf("b stays after a whole idle window: %d resources", len(got.Resources))
	}
	later := b.Read("a", 10)
	if a := later.Resources[0]; later.FromSec != 1002 || a.Pass[3] != 5 || !a.Sampled[0] || a.Pass[0] != 0 || a.Pass[BacklogSeconds-1] != 5 {
		t.Errorf("a from %d after a whole window = %v", later.FromSec, a.Pass)
	}
}

func TestBacklogHoldsAtMostItsResources(t *testing.T) {
	b := NewBacklog(2)
	b.Record(1, func(add func(string, engine.LiveStats)) {
		for _, n := range []string{"a", "b", "c"} {
			add(n, engine.LiveStats{PassQps: 1})
		}
	})
	if got := len(b.Read("", 10).Resources); got != 2 {
		t.Errorf("the backlog holds %d resources, want its limit 2", got)
	}
}

// TestBacklogMemory fills the backlog with BacklogResources resources
// active every second of the window and reports what it holds: the budget
// the package comment states.
func TestBacklogMemory(t *testing.T) {
	if testing.Short() {
		t.Log("the backlog's memory is measured without -short")
		return
	}
	names := make([]string, BacklogResources)
	for i := range names {
		names[i] = fmt.Sprintf("GET /api/orders/%05d", i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b := NewBacklog(BacklogResources)
	for sec := range int64(BacklogSeconds) {
		b.Record(sec, func(add func(string, engine.LiveStats)) {
			for _, n := range names {
				add(n, engine.LiveStats{PassQps: 100, CompleteQps: 100, AvgRtMs: 4, Concurrency: 2})
			}
		})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("the backlog holds %.1f MB for %d resources active over %d s (%d bytes a resource)",
		float64(held)/1e6, BacklogResources, BacklogSeconds, held/BacklogResources)
	if const64 := int64(64 << 20); held > const64 {
		t.Errorf("the backlog holds %d bytes, over its budget of 64 MiB", held)
	}
	runtime.KeepAlive(b)
}
