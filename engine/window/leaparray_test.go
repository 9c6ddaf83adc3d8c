package window

import (
	"sync"
	"testing"
)

func newWindow(t *testing.T, samples int, intervalMs int64) *LeapArray {
	t.Helper()
	la, err := New(samples, intervalMs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return la
}

func TestNewRejectsBadShapes(t *testing.T) {
	tests := []struct {
		name       string
		samples    int
		intervalMs int64
		buf        []Bucket
	}{
		{"interval not divisible by bucket count", 3, 1000, nil},
		{"zero buckets", 0, 1000, nil},
		{"negative buckets", -2, 1000, nil},
		{"zero interval", 10, 0, nil},
		{"negative interval", 10, -1000, nil},
		{"buffer of the wrong size", 10, 1000, make([]Bucket, 11)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.samples, tt.intervalMs, tt.buf); err == nil {
				t.Fatalf("New(%d, %d) = nil error, want one", tt.samples, tt.intervalMs)
			}
		})
	}
}

func TestFirstRequestAtTimeZero(t *testing.T) {
	la := newWindow(t, 10, 1000)
	if got := la.Sum(0, Pass); got != 0 {
		t.Fatalf("fresh window sum = %d, want 0", got)
	}
	b := la.Current(0)
	b.Add(Pass, 3)
	if b.StartMs() != 0 {
		t.Fatalf("bucket start = %d, want 0", b.StartMs())
	}
	for _, ms := range []int64{0, 999} {
		if got := la.Sum(ms, Pass); got != 3 {
			t.Fatalf("sum at %d = %d, want 3", ms, got)
		}
	}
	if got := la.Sum(1000, Pass); got != 0 {
		t.Fatalf("sum at 1000 = %d, want 0 (bucket 0 left the window)", got)
	}
}

func TestBucketRollover(t *testing.T) {
	la := newWindow(t, 10, 1000)
	// 20 passes a second, one every 50 ms. Once a second has gone by, the
	// window holds the last 20 in the middle of a bucket (at a bucket's
	// first millisecond it spans 901 ms, the oldest bucket just dropped).
	for ms := int64(0); ms < 3000; ms += 50 {
		la.Current(ms).Add(Pass, 1)
		if ms >= 1000 && ms%100 == 50 {
			if got := la.Sum(ms, Pass); got != 20 {
				t.Fatalf("Sum(%d) = %d, want 20", ms, got)
			}
		}
	}
	b := la.Current(2950)
	if b.StartMs() != 2900 {
		t.Fatalf("bucket for 2950 starts at %d, want 2900", b.StartMs())
	}
	if got := b.Get(Pass); got != 2 {
		t.Fatalf("bucket 2900 holds %d passes, want 2 (2900 and 2950)", got)
	}
	// The slot of bucket 2900 is reused a second later, reset first.
	b = la.Current(3900)
	if b.StartMs() != 3900 || b.Get(Pass) != 0 {
		t.Fatalf("reused bucket: start %d, %d passes; want 3900 and 0", b.StartMs(), b.Get(Pass))
	}
}

func TestGapLongerThanRing(t *testing.T) {
	la := newWindow(t, 10, 1000)
	for ms := int64(0); ms < 1000; ms += 10 {
		la.Current(ms).Add(Pass, 1)
	}
	const later = 1_000_000
	if got := la.Sum(later, Pass); got != 0 {
		t.Fatalf("Sum after a long gap = %d, want 0", got)
	}
	b := la.Current(later)
	if b.StartMs() != later || b.Get(Pass) != 0 {
		t.Fatalf("bucket after gap: start %d passes %d, want %d and 0", b.StartMs(), b.Get(Pass), later)
	}
	b.Add(Pass, 1)
	if got := la.Sum(later, Pass); got != 1 {
		t.Fatalf("Sum = %d, want 1", got)
	}
}

func TestClockSteppingBackLosesNothing(t *testing.T) {
	la := newWindow(t, 10, 1000)
	la.Current(5000).Add(Pass, 4)
	// Back by 1 s: the same slot, holding a newer span; it is kept and
	// counted into, not reset.
	b := la.Current(4000)
	if b.StartMs() != 5000 {
		t.Fatalf("after stepping back got bucket %d, want the newer 5000 kept", b.StartMs())
	}
	b.Add(Pass, 1)
	// Back within the ring: another slot, an older span; counted too.
	la.Current(4500).Add(Pass, 2)
	if got := la.Sum(5000, Pass); got != 7 {
		t.Fatalf("Sum = %d, want 7", got)
	}
}

// TestConcurrentRollover has writers move through the ring together, racing
// to claim every bucket as its time comes: one resets it, the others wait for
// that, and no count is lost.
func TestConcurrentRollover(t *testing.T) {
	la := newWindow(t, 10, 1000)
	const writers, spanMs = 8, 1000 // the ring's 10 buckets, none reused
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for ms := range int64(spanMs) {
				la.Current(ms).Add(Block, 1)
			}
		})
	}
	wg.Wait()
	var total int64
	for i := range la.Len() {
		total += la.At(i).Get(Block)
	}
	if total != writers*spanMs {
		t.Fatalf("counted %d, want %d", total, writers*spanMs)
	}
}
