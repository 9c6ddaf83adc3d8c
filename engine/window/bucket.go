package window

import (
	"math"
	"sync/atomic"
)

// Event is one of the counters a bucket keeps.
type Event int

// The counted events. RtSum is the sum of response times in milliseconds of
// completed calls, so that RtSum/Complete is the mean. ShadowBlock, which
// only rules in shadow mode count, comes last: a Tally keeps it apart, only
// once one is counted.
const (
	Pass Event = iota
	Block
	Complete
	Error
	RtSum
	ShadowBlock
	// NumEvents is the number of events above.
	NumEvents
)

// noRt is the MinRt of a bucket that has seen no completed call.
const noRt = math.MaxInt64

// Bucket is one slot of the ring: the counters of the events that happened in
// [Start, Start+bucket length).
type Bucket struct {
	start    atomic.Int64
	counters [NumEvents]atomic.Int64
}

// Extremes are the extremes of response time and concurrency over a
// minute of a Tally: they cannot be told from running totals, so calls
// record them here too (a load, and a CAS only for a new extreme).
type Extremes struct {
	minRt          atomic.Int64
	maxRt          atomic.Int64
	maxConcurrency atomic.Int64
	// busiestSecond is the most calls, passed or blocked, in one second
	// (a Tally's: ten spans in a row) of the minute.
	busiestSecond atomic.Int64
}

// StartMs returns the start of the time span the bucket counts.
func (b *Bucket) StartMs() int64 { return b.start.Load() }

// Add counts n events of kind ev.
func (b *Bucket) Add(ev Event, n int64) { b.counters[ev].Add(n) }

// Get returns the count of ev.
func (b *Bucket) Get(ev Event) int64 { return b.counters[ev].Load() }

// ObserveRt records a completed call that took rtMs.
func (x *Extremes) ObserveRt(rtMs int64) {
	storeMin(&x.minRt, rtMs)
	storeMax(&x.maxRt, rtMs)
}

// ObserveConcurrency records c calls in flight.
func (x *Extremes) ObserveConcurrency(c int64) { storeMax(&x.maxConcurrency, c) }

// reset zeroes the counters. The caller owns the bucket (see LeapArray.Current).
func (b *Bucket) reset() {
	for i := range b.counters {
		b.counters[i].Store(0)
	}
}

// observeSecond records n calls in one second.
func (x *Extremes) observeSecond(n int64) { storeMax(&x.busiestSecond, n) }

// reset forgets the extremes. The caller owns their minute.
func (x *Extremes) reset() {
	x.minRt.Store(noRt)
	x.maxRt.Store(0)
	x.maxConcurrency.Store(0)
	x.busiestSecond.Store(0)
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

func storeMin(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v >= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// AddComplete counts n completed calls that took rtMs each, errors of them.
func (b *Bucket) AddComplete(n, rtMs, errors int64) {
	b.counters[Complete].Add(n)
	b.counters[RtSum].Add(n * rtMs)
	if errors > 0 {
		b.counters[Error].Add(errors)
	}
}
