package window

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestPassLogBytes: a PassLog, which every flow rule of the common kind
// keeps, fits the 112-byte size class, 16 bytes a rule below the next.
func TestPassLogBytes(t *testing.T) {
	if size := unsafe.Sizeof(PassLog{}); size != 112 {
		t.Fatalf("a PassLog is %d bytes, want 112", size)
	}
}

// exactWindow is what a PassLog stands for: every pass's time, in the
// order recorded (times never go back).
type exactWindow []int64

// admits reports whether n more passes leave at most capacity passes
// after sinceMs.
func (w exactWindow) admits(n, capacity, sinceMs int64) bool {
	out, _ := slices.BinarySearch(w, sinceMs+1)
	return int64(len(w)-out)+n <= capacity
}

func (w *exactWindow) record(nowMs, n int64) {
	for range n {
		*w = append(*w, nowMs)
	}
}

// counted is a pass log fed as a resource feeds one: its passes numbered
// by a counter of their own.
type counted struct {
	log    *PassLog
	passes atomic.Int64
}

func newCounted(least, most int64) *counted { return &counted{log: NewPassLog(least, most, 0, 0)} }

// newCountedWithin is newCounted with a log that forgets marks older than
// its window, of intervalMs.
func newCountedWithin(least, most, intervalMs int64) *counted {
	return &counted{log: NewPassLogWithin(least, most, 0, 0, Horizon{IntervalMs: intervalMs})}
}

// marks returns how many marks the log keeps now.
func (c *counted) marks() int { return len(c.log.marksOf(c.log.ring.Load())) }

func (c *counted) record(nowMs, n int64) { c.log.Mark(nowMs, c.passes.Add(n)) }

func (c *counted) admits(n, capacity, sinceMs int64) bool {
	return c.log.Admits(c.passes.Load(), n, capacity, sinceMs)
}

// TestPassLogAgainstEveryPass records random traffic and checks each
// decision, at a capacity between the log's least and most, against one
// made from every pass's time: the same up to 100, where every pass is
// marked; above it, never more permissive, and at most perMark-1 passes
// less. So too a log that forgets by time, under traffic that now and
// then falls to a few passes a window and rises again past its ring.
func TestPassLogAgainstEveryPass(t *testing.T) {
	const intervalMs = 1000
	for _, tt := range []struct {
		least, most int64
		within      bool
	}{
		{1, 1, false}, {7, 7, false}, {100, 100, false}, {101, 101, false}, {250, 250, false},
		{1_000, 1_000, false}, {33, 100, false}, {400, 1_200, false},
		{7, 7, true}, {100, 100, true}, {101, 101, true}, {1_000, 1_000, true}, {33, 100, true}, {400, 1_200, true},
	} {
		rng := rand.New(rand.NewPCG(1, uint64(tt.most)))
		l := newCounted(tt.least, tt.most)
		if tt.within {
			l = newCountedWithin(tt.least, tt.most, intervalMs)
		}
		var all exactWindow
		now := int64(0)
		for i := range 20_000 {
			gapMs := 3 * intervalMs / tt.least
			if tt.within && i/1000%2 == 1 {
				gapMs = intervalMs / 2 // a few passes a window
			}
			now += rng.Int64N(gapMs)
			n := 1 + rng.Int64N(3)
			capacity := tt.least + rng.Int64N(tt.most-tt.least+1)
			since := now - intervalMs
			got, want := l.admits(n, capacity, since), all.admits(n, capacity, since)
			switch {
			case tt.least <= groupsPerCapacity && got != want:
				t.Fatalf("%+v at %d ms, %d more under %d: log says %v, every pass says %v", tt, now, n, capacity, got, want)
			case got && !want:
				t.Fatalf("%+v at %d ms: log admits %d more under %d, every pass says no", tt, now, n, capacity)
			case !got && all.admits(n+l.log.perMark-1, capacity, since):
				t.Fatalf("%+v at %d ms: log refuses %d more under %d with room for %d", tt, now, n, capacity, n+l.log.perMark-1)
			}
			if got {
				l.record(now, n)
				all.record(now, n)
			}
		}
	}
}

// TestPassLogSize: what a log keeps for the capacities it decides on.
func TestPassLogSize(t *testing.T) {
	for _, tt := range []struct{ least, most, perMark, marks int64 }{
		{0, 0, 1, 0},
		{1, 1, 1, 3},
		{100, 100, 1, 102},
		{101, 101, 2, 52},
		{200, 200, 2, 102},
		{10_000, 10_000, 100, 102},
		{1e12, 1e12, 1e10, 102},
		{33, 100, 1, 102},           // a warm-up from 100/3 to 100
		{1_000, 100_000, 98, 1_022}, // a cold factor of 100: the ring's bound
	} {
		l := &counted{log: NewPassLog(tt.least, tt.most, 0, 0)}
		if l.log.perMark != tt.perMark || int64(l.marks()) != tt.marks {
			t.Errorf("NewPassLog(%d, %d): a mark every %d passes, %d marks; want %d and %d",
				tt.least, tt.most, l.log.perMark, l.marks(), tt.perMark, tt.marks)
		}
	}
}

// TestPassLogWithinGrowsWithTraffic: a log that forgets by time keeps
// firstMarks marks while its traffic is a few passes a window, forgetting
// those out of it, doubles its ring when a burst needs more, up to what
// its capacity needs, and decides as a log of every mark does throughout.
func TestPassLogWithinGrowsWithTraffic(t *testing.T) {
	const intervalMs = 1000
	l := newCountedWithin(100, 100, intervalMs)
	var all exactWindow
	now := int64(0)
	step := func(gapMs, calls int64) {
		for range calls {
			now += gapMs
			since := now - intervalMs
			if got, want := l.admits(1, 100, since), all.admits(1, 100, since); got != want {
				t.Fatalf("at %d ms: log says %v, every pass says %v", now, got, want)
			}
			if all.admits(1, 100, since) {
				l.record(now, 1)
				all.record(now, 1)
			}
		}
	}
	step(700, 50) // under 3 marks in a window and its margin
	if got := l.marks(); got != firstMarks {
		t.Fatalf("%d marks for a pass every 700 ms, want %d", got, firstMarks)
	}
	step(50, 100) // 20 a second, 40 marks in a window and its margin
	if got := l.marks(); got != 8*firstMarks {
		t.Fatalf("%d marks for 20 passes a second, want %d", got, 8*firstMarks)
	}
	step(1, 3000) // over the capacity: 102 marks hold it
	if got := l.marks(); got != 102 {
		t.Fatalf("%d marks at the capacity, want 102", got)
	}
	step(700, 50)
	if got := l.marks(); got != 102 {
		t.Fatalf("%d marks once traffic fell, want the 102 it grew to", got)
	}
}

// TestPassLogPacedLongRun: under traffic evenly paced at 1.05 times the
// capacity, once settled, the log passes within about 1% of what every
// pass's time would (98.9% at least), where holding passes back costs the
// most: perMark-1 passes of a group held a generation late, with
// capacities just over a multiple of groupsPerCapacity.
func TestPassLogPacedLongRun(t *testing.T) {
	const intervalMs, intervals = 1000, 60
	settledRate := func(capacity int64, admits func(nowMs int64) bool) float64 {
		var settled int64
		for j := range capacity * 21 * intervals / 20 {
			now := j * intervalMs * 20 / (21 * capacity)
			if admits(now) && now >= intervals/2*intervalMs {
				settled++
			}
		}
		return float64(settled) / (intervals / 2) / float64(capacity)
	}
	for _, capacity := range []int64{100, 101, 150, 201, 814, 10_000} {
		l := newCounted(capacity, capacity)
		got := settledRate(capacity, func(now int64) bool {
			ok := l.admits(1, capacity, now-intervalMs)
			if ok {
				l.record(now, 1)
			}
			return ok
		})
		var all exactWindow
		exact := settledRate(capacity, func(now int64) bool {
			ok := all.admits(1, capacity, now-intervalMs)
			if ok {
				all.record(now, 1)
			}
			return ok
		})
		t.Logf("capacity %d: %.2f%% of it per interval once settled, every pass's time %.2f%%", capacity, 100*got, 100*exact)
		if got < 0.989*exact {
			t.Errorf("capacity %d: %.2f%% of it per interval, under 98.9%% of every pass's %.2f%%", capacity, 100*got, 100*exact)
		}
	}
}

// TestPassLogHoldsEachPassAnInterval: with every pass marked, each pass
// frees its room exactly an interval after it, at a bucket's end or not.
func TestPassLogHoldsEachPassAnInterval(t *testing.T) {
	l := newCounted(3, 3)
	l.record(99, 1)
	l.record(150, 2)
	for _, tt := range []struct {
		nowMs int64
		room  int64
	}{{1098, 0}, {1099, 1}, {1149, 1}, {1150, 3}} {
		since := tt.nowMs - 1000
		if l.admits(tt.room+1, 3, since) || tt.room > 0 && !l.admits(tt.room, 3, since) {
			t.Errorf("at %d ms: want room for %d", tt.nowMs, tt.room)
		}
	}
}

// TestPassLogBatchOverTheRing: a batch larger than the ring marks its last
// groups, and a batch over the capacity never fits.
func TestPassLogBatchOverTheRing(t *testing.T) {
	l := newCounted(1000, 1000) // 10 passes a group, 102 marks
	l.record(0, 990)
	l.record(5, 4950)
	if l.admits(1, 1000, 4) {
		t.Fatal("admitted with 4,950 passes at 5 ms in the window")
	}
	if !l.admits(1000, 1000, 5) {
		t.Fatal("refused 1,000 passes once every pass is out")
	}
	if l.admits(1001, 1000, 5) {
		t.Fatal("admitted a batch over the capacity")
	}
	closed := newCounted(0, 0)
	closed.record(0, 3)
	if closed.admits(1, 0, 0) {
		t.Fatal("a log of capacity 0 admitted a pass")
	}
}

// TestPassLogHistory: a log made for a resource that has had passes counts
// them out, unless told when they were; passes counted but not yet marked
// count as in; passes the resource's counter missed are numbered by the
// log.
func TestPassLogHistory(t *testing.T) {
	l := NewPassLog(5, 5, 100, 0) // passes 1 … 100 are older than the log
	if !l.Admits(100, 5, 5, 0) {
		t.Fatal("passes from before the log were counted")
	}
	l = NewPassLog(5, 5, 97, 0) // passes 98 … 100 were at 1000 ms
	l.Mark(1000, 100)
	if l.Admits(100, 3, 5, 999) || !l.Admits(100, 2, 5, 999) || !l.Admits(100, 5, 5, 1000) {
		t.Fatal("the three passes at 1000 ms were not counted for a second")
	}
	// Passes 101 and 102, counted, not marked yet: a batch that needs them
	// out does not fit; one that needs only pass 100 out does.
	if l.Admits(102, 5, 5, 5000) || !l.Admits(102, 3, 5, 5000) {
		t.Fatal("passes counted but not marked were taken for out")
	}
	l.Mark(1500, 102) // then marked late, with a later time
	if !l.Admits(102, 5, 5, 2500) {
		t.Fatal("passes 101 and 102 still counted a second after their mark")
	}
	// A counter at 7 that missed the 3 passes at 1000 ms: the log numbers
	// them 8 … 10.
	l = NewPassLog(5, 5, 7, 3)
	l.Mark(1000, 7)
	if l.Admits(7, 3, 5, 999) || !l.Admits(7, 2, 5, 999) {
		t.Fatal("the passes the counter missed were not counted")
	}
	l.Mark(1200, 8) // the counter's 8th pass is the log's 11th
	if l.Admits(8, 2, 5, 999) || !l.Admits(8, 2, 5, 1000) {
		t.Fatal("the pass after the missed ones was not counted")
	}
}

// TestPassLogAcrossLongGaps: marks keep 32 bits of time, yet passes
// 2^32 ms apart (give or take a few ms), or spread over several such spans,
// are told apart from recent ones.
func TestPassLogAcrossLongGaps(t *testing.T) {
	const span = int64(1) << 32
	for _, gapMs := range []int64{span - 300, span, span + 300, span / 3, 20 * 86_400_000} {
		l := newCounted(4, 4)
		var all exactWindow
		now := int64(1_700_000_000_000)
		for i := range 12 {
			if i%3 == 0 {
				now += gapMs
			} else {
				now += 200
			}
			since := now - 1000
			if got, want := l.admits(1, 4, since), all.admits(1, 4, since); got != want {
				t.Fatalf("gap %d ms, call %d: log says %v, every pass says %v", gapMs, i, got, want)
			}
			l.record(now, 1)
			all.record(now, 1)
		}
	}
}

// TestPassLogClockBack: passes recorded at a later time than a decision's
// count against it.
func TestPassLogClockBack(t *testing.T) {
	l := newCounted(5, 5)
	l.record(5000, 4)
	l.record(3900, 1)
	if l.admits(1, 5, 3900-1000) {
		t.Fatal("admitted a 6th pass when the clock went back")
	}
	if !l.admits(5, 5, 5000) {
		t.Fatal("refused once every pass is out")
	}
}

// TestPassLogConcurrentRecords: writers racing across group boundaries,
// millisecond after millisecond, leave every group marked, and a writer
// running late never lowers a later group's mark.
func TestPassLogConcurrentRecords(t *testing.T) {
	for _, within := range []bool{false, true} {
		l := newCounted(500, 500) // 5 passes a group
		if within {
			// Its ring grows from 7 marks to 102 as the writers race.
			l = newCountedWithin(500, 500, 1)
		}
		checkConcurrentRecords(t, l)
	}
}

func checkConcurrentRecords(t *testing.T, l *counted) {
	const writers, callsPerMs, lastMs = 8, 100, 9
	for ms := range int64(lastMs + 1) {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for range callsPerMs {
					l.record(ms, 1+int64(w%3))
				}
			})
		}
		wg.Wait()
	}
	if l.admits(1, 500, lastMs-1) {
		t.Fatal("admitted with the last millisecond's 1,600 passes in the window")
	}
	if !l.admits(500, 500, lastMs) {
		t.Fatal("refused once every pass is out")
	}
	// A writer of the first millisecond that read the fence then and marks
	// only now.
	fence := l.log.nextMark.Load()
	l.log.nextMark.Store(l.log.perMark)
	l.log.Mark(0, l.passes.Load())
	if l.admits(1, 500, lastMs-1) || l.log.nextMark.Load() != fence {
		t.Fatal("a late writer lowered the marks of the last millisecond")
	}
}
