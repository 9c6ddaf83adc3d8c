package window

import (
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// TestStripesLinesAreAligned: every line of Stripes is two cache lines of
// its own, its counts and its block of pass numbers, so that two cores
// counting on two lines share none.
func TestStripesLinesAreAligned(t *testing.T) {
	if size := unsafe.Sizeof(stripe{}); size != 128 {
		t.Fatalf("a stripe is %d bytes, want 128", size)
	}
	if off := unsafe.Offsetof(stripe{}.block); off != 64 {
		t.Fatalf("a stripe's block is at offset %d, want 64", off)
	}
	for range 100 {
		s := newStripes()
		if n := len(s.lines); n < runtime.GOMAXPROCS(0) || n < 2 || n&(n-1) != 0 {
			t.Fatalf("%d lines for GOMAXPROCS %d, want a power of two at least that and 2", n, runtime.GOMAXPROCS(0))
		}
		if at := uintptr(unsafe.Pointer(&s.lines[0])); at%64 != 0 {
			t.Fatalf("the lines start at %#x, not on a cache line", at)
		}
	}
}

// TestStripesSumExactly: goroutines that collide on the lines, and so
// change the salt that places them, lose no count.
func TestStripesSumExactly(t *testing.T) {
	s := newStripes()
	const goroutines, adds = 16, 20_000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range adds {
				s.Add(Complete, 2)
				s.Add(Pass, 1)
				s.Add(Pass, -1)
				s.Add(Pass, 1)
			}
		})
	}
	wg.Wait()
	var totals [NumEvents]int64
	s.addTo(&totals)
	if want := int64(goroutines * adds * 2); totals[Complete] != want {
		t.Errorf("counted %d, want %d", totals[Complete], want)
	}
	if want := int64(goroutines * adds); s.sum(Pass) != want {
		t.Errorf("summed %d passes, want %d", s.sum(Pass), want)
	}
}

// TestTallyContendedCollectsEveryCount has writers count through several
// minutes while a collector takes what they counted; the tally is made to
// stripe halfway (as a collision would) if the writers did not collide
// before: what was counted on the shared line and on the stripes is
// collected exactly once.
func TestTallyContendedCollectsEveryCount(t *testing.T) {
	tally := newTally()
	const writers, steps, stepMs = 8, 3_000, 97 // about 5 minutes
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range int64(steps) {
				if w == 0 && i == steps/2 {
					tally.stripe()
				}
				tally.Open(i * stepMs)
				tally.Add(Block, 1)
				tally.AddComplete(1, 3, 1, 1)
			}
		})
	}
	collected := collectWhile(tally, &wg)
	if tally.Stripes() == nil {
		t.Fatal("the tally has no stripes")
	}
	var sums [NumEvents]int64
	for _, m := range collected {
		for ev, n := range m.Counts {
			sums[ev] += n
		}
	}
	want := [NumEvents]int64{Block: writers * steps, Complete: writers * steps, Error: writers * steps, RtSum: 3 * writers * steps}
	if sums != want {
		t.Fatalf("collected %v, want %v", sums, want)
	}
}

// TestTallyStripesOnCollision: a tally counts on its shared line while
// one writer counts, and gets stripes once writers on several cores
// collide there.
func TestTallyStripesOnCollision(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("writers collide only on two cores or more")
	}
	tally := newTally()
	for range 100_000 {
		tally.count(1_000, Pass, 1)
	}
	if tally.Stripes() != nil {
		t.Fatal("one writer made stripes")
	}
	deadline := time.Now().Add(10 * time.Second)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for tally.Stripes() == nil && time.Now().Before(deadline) {
				for range 1_000 {
					tally.count(1_000, Pass, 1)
				}
			}
		})
	}
	wg.Wait()
	if tally.Stripes() == nil {
		t.Fatal("writers on every core made no stripes in 10 s")
	}
}
