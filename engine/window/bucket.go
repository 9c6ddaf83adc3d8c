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
// record them here too (a load, and a CAS only for a new extreme). Each
// keeps 32 bits (clamp32), which the half of a Tally that they save keeps
// a Resource in the 512-byte size class: response times up to 49 days,
// and up to 4,294,967,294 calls in flight or in a second, are exact; more
// count as that much.
type Extremes struct {
	minRt          atomic.Uint32
	maxRt          atomic.Uint32
	maxConcurrency atomic.Uint32
	// busiestSecond is the most calls, passed or blocked, in one second
	// (a Tally's: ten spans in a row) of the minute.
	busiestSecond atomic.Uint32
}

// noNarrowRt is what Extremes keep as their minRt until a call completes.
const noNarrowRt = math.MaxUint32

// clamp32 returns v as Extremes keep it.
func clamp32(v int64) uint32 { return uint32(min(max(v, 0), noNarrowRt-1)) }

// minRtMs returns the least response time, noRt if no call completed.
func (x *Extremes) minRtMs() int64 {
	if rt := x.minRt.Load(); rt != noNarrowRt {
		return int64(rt)
	}
	return noRt
}

// StartMs returns the start of the time span the bucket counts.
func (b *Bucket) StartMs() int64 { return b.start.Load() }

// Add counts n events of kind ev.
func (b *Bucket) Add(ev Event, n int64) { b.counters[ev].Add(n) }

// Get returns the count of ev.
func (b *Bucket) Get(ev Event) int64 { return b.counters[ev].Load() }

// ObserveRt records a completed call that took rtMs.
func (x *Extremes) ObserveRt(rtMs int64) {
	rt := clamp32(rtMs)
	storeMin32(&x.minRt, rt)
	storeMax32(&x.maxRt, rt)
}

// ObserveConcurrency records c calls in flight.
func (x *Extremes) ObserveConcurrency(c int64) { storeMax32(&x.maxConcurrency, clamp32(c)) }

// reset zeroes the counters. The caller owns the bucket (see LeapArray.Current).
func (b *Bucket) reset() {
	for i := range b.counters {
		b.counters[i].Store(0)
	}
}

// observeSecond records n calls in one second.
func (x *Extremes) observeSecond(n int64) { storeMax32(&x.busiestSecond, clamp32(n)) }

// reset forgets the extremes. The caller owns their minute.
func (x *Extremes) reset() {
	x.minRt.Store(noNarrowRt)
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

func storeMax32(a *atomic.Uint32, v uint32) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

func storeMin32(a *atomic.Uint32, v uint32) {
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
