package engine

import (
	"math"
	"sync/atomic"
	"time"
)

// throttler spaces passes evenly: statIntervalMs/threshold apart, a batch of
// n taking n slots. A caller whose slot is in the future is told to wait
// until then, unless that is more than maxQueueingTimeMs away. Times are kept
// in nanoseconds so that spacings such as 1000/3 ms do not drift.
type throttler struct {
	intervalNs     float64
	maxQueueingNs  int64
	lastPassedNano atomic.Int64
}

// maxSlotNs bounds the spacing of passes (about 36 years), so that slot
// arithmetic cannot overflow whatever the threshold.
const maxSlotNs = 1 << 60

func newThrottler(statIntervalMs, maxQueueingTimeMs int64) *throttler {
	t := &throttler{
		intervalNs:    float64(statIntervalMs * int64(time.Millisecond)),
		maxQueueingNs: maxQueueingTimeMs * int64(time.Millisecond),
	}
	t.lastPassedNano.Store(math.MinInt64 / 2)
	return t
}

func (t *throttler) check(nowMs, count int64, threshold float64) (ok bool, waitNs int64) {
	return throttle(&t.lastPassedNano, t.intervalNs, t.maxQueueingNs, nowMs, count, threshold)
}

// throttle is throttler.check on the slot kept in lastPassedNano, for
// callers that keep one per key.
func throttle(lastPassedNano *atomic.Int64, intervalNs float64, maxQueueingNs, nowMs, count int64, threshold float64) (ok bool, waitNs int64) {
	costNs := math.Round(float64(count) * intervalNs / threshold)
	if threshold <= 0 || costNs > maxSlotNs {
		return false, 0 // a slot this far away is never reached
	}
	cost := int64(costNs)
	now := nowMs * int64(time.Millisecond)
	for {
		last := lastPassedNano.Load()
		expected := last + cost
		if expected <= now {
			if lastPassedNano.CompareAndSwap(last, now) {
				return true, 0
			}
			continue
		}
		wait := expected - now
		if wait > maxQueueingNs {
			return false, 0
		}
		if lastPassedNano.CompareAndSwap(last, expected) {
			return true, wait
		}
	}
}
