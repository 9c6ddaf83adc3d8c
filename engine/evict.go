package engine

import (
	"strings"
	"time"
)

// OverflowResource is the resource that counts the calls on new resources
// the engine had no room for (Options.MaxResources): they are let through
// as calls to a resource without rules are, and nothing that passed goes
// uncounted. A rule may name it, like any resource.
const OverflowResource = "(overflow)"

// overflowSampleEveryMs is how often the engine keeps a name that
// overflowed: the one allocation of the overflow path, once a second.
const overflowSampleEveryMs = 1000

// retiredGraceMs is how long an evicted resource is still collected by
// CollectMinutes: a call that found the handle just before the eviction
// records into it within that time.
const retiredGraceMs = minuteMs

// Overflow says how often the engine, full, counted a call under
// OverflowResource.
type Overflow struct {
	// Calls counts the names resolved to OverflowResource since the
	// engine started: once a call for callers that go by name (Entry by
	// name, Resource on each call).
	Calls int64
	// RecentName is one of the names that overflowed lately, "" if none
	// ever did.
	RecentName string
}

// Overflow returns how often the engine was full.
func (e *Engine) Overflow() Overflow {
	o := Overflow{Calls: e.overflowCalls.Load()}
	if name := e.overflowName.Load(); name != nil {
		o.RecentName = *name
	}
	return o
}

// overflowed counts a call on name, which the engine had no room for.
func (e *Engine) overflowed(name string) {
	e.overflowCalls.Add(1)
	now := e.clock.NowMs()
	if last := e.overflowSampleMs.Load(); now-last >= overflowSampleEveryMs && e.overflowSampleMs.CompareAndSwap(last, now) {
		sample := strings.Clone(name)
		e.overflowName.Store(&sample)
	}
}

// retiredResource is an evicted resource, and when it was evicted.
type retiredResource struct {
	res  *Resource
	atMs int64
}

// sweepInterval is how often the engine looks for idle resources: a
// quarter of the TTL, from a second to a minute, so that a resource leaves
// at most a minute or so after its TTL and an idle engine stays idle.
func sweepInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/4, time.Second), time.Minute)
}

// sweepEvery runs EvictIdle every interval until Close.
func (e *Engine) sweepEvery(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-e.stopSweep:
			return
		case <-t.C:
			e.EvictIdle()
		}
	}
}

// EvictIdle forgets every resource that no rule names (as its resource, a
// flow rule's refResource or a circuit breaker's), that has no call in
// flight and that saw no traffic for Options.ResourceIdleTTL, and returns
// how many it forgot. The engine runs it by itself in the background; call
// it to sweep at once (tests on a manual clock do).
//
// Nothing counted is lost: an evicted resource is still collected by
// CollectMinutes for a minute, so its last figures, and those of calls
// that raced with the eviction, reach the history. A handle to it keeps
// counting under a fresh lookup of its name (Resource.Evicted).
func (e *Engine) EvictIdle() int {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	now := e.clock.NowMs()
	var idle []*Resource
	for _, r := range e.resources.all() {
		if !e.book.has(r) && r.rules.Load() == noRules && r.idleAt(now, e.idleTTLMs) {
			idle = append(idle, r)
		}
	}
	// Out of the index first, marked next: a call that sees the mark and
	// looks the name up again cannot find the evicted resource.
	e.resources.remove(idle)
	for _, r := range idle {
		r.rules.Store(evictedRules)
	}

	e.collectMu.Lock()
	defer e.collectMu.Unlock()
	for _, r := range idle {
		e.retired = append(e.retired, retiredResource{res: r, atMs: now})
	}
	// Without a collector, what is left uncollected after two minutes is
	// lost anyway (CollectMinutes keeps a finished minute for one more).
	e.dropRetired(now - 2*retiredGraceMs)
	return len(idle)
}

// dropRetired forgets the resources evicted at ms or earlier. The caller
// holds collectMu.
func (e *Engine) dropRetired(ms int64) {
	kept := e.retired[:0]
	for _, rr := range e.retired {
		if rr.atMs > ms {
			kept = append(kept, rr)
		}
	}
	clear(e.retired[len(kept):])
	e.retired = kept
}

// idleAt reports whether, at nowMs, the resource has no call in flight and
// saw no traffic for ttlMs: its newest minute with a call (or its creation, if
// later) ended that long ago.
func (r *Resource) idleAt(nowMs, ttlMs int64) bool {
	if r.Concurrency() != 0 {
		return false
	}
	lastMs := r.firstSeenMs
	if start, ok := r.second.NewestMinuteMs(); ok {
		lastMs = max(lastMs, start+minuteMs)
	}
	return nowMs-lastMs >= ttlMs
}
