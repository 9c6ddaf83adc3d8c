package window

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
)

const (
	// never is the start of a bucket that has not been used yet and the
	// time of a log's newest mark before its first: far enough in the past
	// that adding an interval cannot overflow.
	never = math.MinInt64 / 4
	// resetting marks a bucket whose counters one writer is zeroing.
	resetting = math.MinInt64
)

// LeapArray is a sliding window of sampleCount buckets of bucketLenMs each,
// covering intervalMs = sampleCount × bucketLenMs, in a ring of as many
// slots:
//
//	interval = 1000 ms, 10 buckets of 100 ms
//
//	time  ... | 900 | 1000 | 1100 | ... | 1800 | 1900 | 2000 |
//	slot        9     0      1            8      9      0
//	                  ^ start 1000, reused for 2000 once it is out
//
// Sums cover the buckets that start in the last interval, the current one
// included: between 901 and 1000 ms of traffic, depending on where in its
// bucket the time is. Flow decisions, which must hold a threshold in any
// real window, read a PassLog instead.
//
// A slot is reused when its start falls out of the ring: the first writer
// that sees the stale start claims it with a CAS, zeroes it (and its
// extremes, if the window keeps them) and publishes the new start; readers
// skip a bucket being reset, and other writers yield until it is published
// (a few stores).
type LeapArray struct {
	bucketLenMs int64
	intervalMs  int64
	buckets     []Bucket
	extremes    []Extremes // beside buckets, or nil (KeepExtremes)
	// current is the slot Current returned last: checking that its bucket
	// still spans the time is cheaper than the two divisions that find it.
	current atomic.Int64
}

// New returns a window of sampleCount buckets over intervalMs; see Init.
func New(sampleCount int, intervalMs int64, buf []Bucket) (*LeapArray, error) {
	la := &LeapArray{}
	if err := la.Init(sampleCount, intervalMs, buf); err != nil {
		return nil, err
	}
	return la, nil
}

// Init makes la a window of sampleCount buckets over intervalMs, which must
// be a positive multiple of sampleCount. buf, when not nil, must hold exactly
// sampleCount buckets and becomes the ring; otherwise the ring is allocated.
// A LeapArray must not be copied after Init.
func (la *LeapArray) Init(sampleCount int, intervalMs int64, buf []Bucket) error {
	if sampleCount <= 0 {
		return fmt.Errorf("window: sample count %d must be positive", sampleCount)
	}
	if intervalMs <= 0 || intervalMs%int64(sampleCount) != 0 {
		return fmt.Errorf("window: interval %d ms is not a positive multiple of %d buckets", intervalMs, sampleCount)
	}
	if buf == nil {
		buf = make([]Bucket, sampleCount)
	} else if len(buf) != sampleCount {
		return fmt.Errorf("window: %d buckets given, %d needed", len(buf), sampleCount)
	}
	for i := range buf {
		buf[i].start.Store(never)
		buf[i].reset()
	}
	*la = LeapArray{bucketLenMs: intervalMs / int64(sampleCount), intervalMs: intervalMs, buckets: buf}
	return nil
}

// KeepExtremes makes the window keep the extremes of response time and
// concurrency beside each bucket (the system rules' inbound window). Call
// it after Init, before any other use.
func (la *LeapArray) KeepExtremes() {
	la.extremes = make([]Extremes, len(la.buckets))
	for i := range la.extremes {
		la.extremes[i].reset()
	}
}

// BucketLenMs returns the length of one bucket.
func (la *LeapArray) BucketLenMs() int64 { return la.bucketLenMs }

// CurrentExtremes is Current with the extremes kept beside the bucket, nil
// if the window keeps none.
func (la *LeapArray) CurrentExtremes(nowMs int64) (*Bucket, *Extremes) {
	i := la.slot(nowMs)
	if la.extremes == nil {
		return &la.buckets[i], nil
	}
	return &la.buckets[i], &la.extremes[i]
}

// Current returns the bucket that counts nowMs, resetting its slot first if
// it still holds an older span. If the clock went back, the slot may hold a
// newer span; that bucket is returned as it is, so nothing recorded is lost.
func (la *LeapArray) Current(nowMs int64) *Bucket {
	return &la.buckets[la.slot(nowMs)]
}

// slot returns the slot of Current's bucket.
func (la *LeapArray) slot(nowMs int64) int64 {
	i := la.current.Load()
	if s := la.buckets[i].start.Load(); s <= nowMs && nowMs-s < la.bucketLenMs {
		return i
	}
	i = la.locate(nowMs)
	la.current.Store(i)
	return i
}

func (la *LeapArray) locate(nowMs int64) int64 {
	span := nowMs / la.bucketLenMs
	start := span * la.bucketLenMs
	i := span % int64(len(la.buckets))
	b := &la.buckets[i]
	for {
		s := b.start.Load()
		switch {
		case s >= start:
			return i
		case s == resetting:
			runtime.Gosched()
		case b.start.CompareAndSwap(s, resetting):
			b.reset()
			if la.extremes != nil {
				la.extremes[i].reset()
			}
			b.start.Store(start)
			return i
		}
	}
}

// Sum returns the count of ev over the buckets that start in
// (nowMs-interval, nowMs]: the last interval, the current bucket included.
func (la *LeapArray) Sum(nowMs int64, ev Event) int64 {
	var sum int64
	for i := range la.buckets {
		b := &la.buckets[i]
		if s := b.start.Load(); s > nowMs-la.intervalMs && s <= nowMs {
			sum += b.counters[ev].Load()
		}
	}
	return sum
}

// SumAll returns the count of every event over the same buckets as Sum, in
// one pass.
func (la *LeapArray) SumAll(nowMs int64) [NumEvents]int64 {
	var sums [NumEvents]int64
	for i := range la.buckets {
		b := &la.buckets[i]
		if s := b.start.Load(); s > nowMs-la.intervalMs && s <= nowMs {
			for ev := range sums {
				sums[ev] += b.counters[ev].Load()
			}
		}
	}
	return sums
}

// Len returns the number of slots in the ring.
func (la *LeapArray) Len() int { return len(la.buckets) }

// At returns the bucket in slot i, 0 <= i < Len. Its StartMs is negative
// while it is unused or being reset.
func (la *LeapArray) At(i int) *Bucket { return &la.buckets[i] }
