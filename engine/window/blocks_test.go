package window

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// claimOrTake passes one call at nowMs on t's numbering as an engine
// does: a number of its line's block, or a block claimed, or one number
// claimed exactly. attempts is raised before the pass is counted.
func claimOrTake(t *Tally, nowMs int64, attempts *atomic.Int64) {
	t.Open(nowMs)
	attempts.Add(1)
	for {
		line, ok := t.TakeNumber(nowMs)
		if ok {
			return
		}
		size, budget, _ := t.BlockSize(1_000_000, 1000)
		seen := t.claimed.Load()
		switch t.ClaimBlock(line, seen, size, budget, nowMs) {
		case BlockClaimed:
			return
		case BlockRefused:
			if t.claimed.CompareAndSwap(seen, seen+1) {
				return
			}
		}
	}
}

// TestBlockNumbersAreNoPassesUntilUsed: the numbers a line's block holds,
// and those it gives up past its deadline, are never counted as passes,
// nor as calls in flight; those used are, at once.
func TestBlockNumbersAreNoPassesUntilUsed(t *testing.T) {
	var tl Tally
	tl.Init()
	tl.stripe()
	now := int64(1_000_000)
	var attempts atomic.Int64
	claimOrTake(&tl, now, &attempts)
	size, _, _ := tl.BlockSize(1_000_000, 1000)
	if size != maxBlock || tl.claimed.Load() != size {
		t.Fatalf("claimed %d numbers for a block of %d, want %d", tl.claimed.Load(), size, maxBlock)
	}
	check := func(nowMs, want int64) {
		t.Helper()
		if got := tl.SumAll(nowMs)[Pass]; got != want {
			t.Fatalf("the second counts %d passes, want %d (%d numbers claimed)", got, want, tl.claimed.Load())
		}
		if got := tl.InFlight(); got != want {
			t.Fatalf("%d calls in flight, want %d", got, want)
		}
	}
	check(now, 1)
	for range 9 {
		claimOrTake(&tl, now, &attempts)
	}
	check(now, 10)
	// Past the deadline, the block's 54 numbers left are given up as the
	// line claims the next block. (A goroutine whose stack moved claims
	// on another line: the counts are the same.)
	now += blockLifeMs + 1
	claimOrTake(&tl, now, &attempts)
	if tl.claimed.Load() < 2*size {
		t.Fatalf("claimed %d numbers, want a second block", tl.claimed.Load())
	}
	check(now, 11)
	if unused := tl.CloseBlocks(now); unused != tl.claimed.Load()-11 {
		t.Fatalf("closing gave %d numbers unused, want %d", unused, tl.claimed.Load()-11)
	}
	check(now, 11)
	if _, ok := tl.TakeNumber(now); ok {
		t.Fatal("a closed line handed out a number")
	}
}

// TestBlockPassesNeverDecrease: goroutines on every core pass calls on
// blocks (given up as the clock moves, and closed now and then) and
// exactly, while a reader sums the passes: a sum never finds fewer passes
// than the one before, nor more than the calls that had begun to pass,
// and once all are done it finds exactly those.
func TestBlockPassesNeverDecrease(t *testing.T) {
	var tl Tally
	tl.Init()
	tl.stripe()
	var now, attempts atomic.Int64
	now.Store(1_000_000)
	var wg sync.WaitGroup
	var done atomic.Bool
	writers := max(runtime.GOMAXPROCS(0), 2)
	for w := range writers {
		wg.Go(func() {
			for i := range 200_000 {
				switch {
				case w != 0:
				case i == 100_000:
					tl.CloseBlocks(now.Load())
					now.Add(closedMs)
				case i%5000 == 0:
					now.Add(1)
				}
				claimOrTake(&tl, now.Load(), &attempts)
			}
		})
	}
	var reader sync.WaitGroup
	reads := 0
	reader.Go(func() {
		last := int64(0)
		for ; !done.Load(); reads++ {
			passes := tl.passed(tl.stripes.Load())
			begun := attempts.Load()
			if passes < last || passes > begun {
				t.Errorf("summed %d passes after %d, with %d calls begun", passes, last, begun)
				return
			}
			last = passes
		}
	})
	wg.Wait()
	done.Store(true)
	reader.Wait()
	var dropped int64
	for i := range tl.stripes.Load().lines {
		dropped += tl.stripes.Load().lines[i].block.dropped.Load()
	}
	t.Logf("%d sums read, %d numbers claimed, %d given up", reads, tl.claimed.Load(), dropped)
	if got, want := tl.InFlight(), attempts.Load(); got != want {
		t.Fatalf("counted %d passes, want %d (%d numbers claimed)", got, want, tl.claimed.Load())
	}
}
