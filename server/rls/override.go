package rls

import (
	"container/list"
	"math"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/engine/window"
)

// MaxOverrides bounds the limiters of limit overrides held at once: past
// it, the least recently used is forgotten, its count with it.
const MaxOverrides = 10_000

// overrideKey names one limiter: a descriptor's limit override on a
// resource, per value of its wildcard entries, apart for each limit.
type overrideKey struct {
	resource, value      string
	requests, intervalMs int64
}

// limiter holds passes to requests in any window of intervalMs, exactly,
// on a pass log as the engine's flow rules do.
type limiter struct {
	requests, intervalMs int64
	passes               atomic.Int64
	log                  *window.PassLog // nil for a limit of 0
}

func newLimiter(requests, intervalMs int64) *limiter {
	l := &limiter{requests: requests, intervalMs: intervalMs}
	if requests > 0 {
		l.log = window.NewPassLog(requests, requests, 0, 0)
	}
	return l
}

// take passes count calls at nowMs if they fit.
func (l *limiter) take(nowMs, count int64) bool {
	if l.log == nil {
		return false
	}
	for {
		seen := l.passes.Load()
		if !l.log.Admits(seen, count, l.requests, nowMs-l.intervalMs) {
			return false
		}
		if l.passes.CompareAndSwap(seen, seen+count) {
			l.log.Mark(nowMs, seen+count)
			return true
		}
	}
}

// status returns the calls that still fit at nowMs and how long until
// the window has room for more (after a block, for count more), as
// engine.Resource.Status does.
func (l *limiter) status(nowMs, count int64, blocked bool) (remaining, resetMs int64) {
	if l.log == nil {
		return 0, l.intervalMs
	}
	total, since := l.passes.Load(), nowMs-l.intervalMs
	remaining = l.log.Room(total, l.requests, since)
	want := remaining + 1
	switch {
	case blocked:
		want = count
	case remaining >= l.requests:
		return remaining, 0
	}
	atMs, known := l.log.FreeAtMs(total, want, l.requests)
	switch {
	case !known:
		return remaining, l.intervalMs
	case atMs == math.MinInt64 || atMs <= since:
		return remaining, 0
	}
	return remaining, atMs - since
}

// overrides is a bounded LRU of limiters.
type overrides struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *overrideEntry, most recent first
	byKey map[overrideKey]*list.Element
}

type overrideEntry struct {
	key     overrideKey
	limiter *limiter
}

func newOverrides(max int) *overrides {
	return &overrides{max: max, order: list.New(), byKey: map[overrideKey]*list.Element{}}
}

// get returns the limiter of key, made if missing.
func (o *overrides) get(key overrideKey) *limiter {
	o.mu.Lock()
	defer o.mu.Unlock()
	if el := o.byKey[key]; el != nil {
		o.order.MoveToFront(el)
		return el.Value.(*overrideEntry).limiter
	}
	if o.order.Len() >= o.max {
		oldest := o.order.Back()
		o.order.Remove(oldest)
		delete(o.byKey, oldest.Value.(*overrideEntry).key)
	}
	l := newLimiter(key.requests, key.intervalMs)
	o.byKey[key] = o.order.PushFront(&overrideEntry{key: key, limiter: l})
	return l
}
