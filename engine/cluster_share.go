package engine

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/engine/window"
)

// clusterShare is a loaded cluster rule's side of the shared count: the
// leases its engine holds for it, what its calls asked, and, while the
// count is unreachable, its fallback. Calls read and spend; the engine's
// rounds (clusterLink) fill and settle.
type clusterShare struct {
	rule FlowRule

	// lease is the lease calls spend, nil before the first; next the one
	// of the coming bucket, asked for ahead.
	lease atomic.Pointer[clusterLease]
	next  atomic.Pointer[clusterLease]
	// asked counts the calls decided since the last round: the demand the
	// next asks are sized by.
	asked atomic.Int64
	// credit counts the passes made since the last round with no lease for
	// their time (the rule idle until then), up to creditCap; the round
	// charges them to the count.
	credit    atomic.Int64
	creditCap atomic.Int64
	// idle is set while the rule is idle: from a round that saw no calls
	// of it (or its loading) until the count answers an ask that wanted
	// passes. Only an idle rule passes on credit: one whose lease ran out
	// under demand waits for the next, or it would pass a round's credit
	// each time a lease ends, past the threshold.
	idle atomic.Bool
	// fallback, when set, decides in the count's stead.
	fallback atomic.Pointer[clusterFallback]
	// rejoin, when set, holds the calls to a local fallback's limit as
	// well as to the leases, for a window after the count answered again.
	rejoin atomic.Pointer[clusterRejoin]
	// fallbackBlocked is what a call the fallback blocks gets; the rule's
	// own BlockError, what one the count refused gets.
	fallbackBlocked *BlockError

	mu      sync.Mutex      // guards the switch of leases and retired
	retired []*clusterLease // ended leases whose leftovers are to be returned

	// engines is how many engines share the rule, as the count last said.
	engines atomic.Int64

	// Kept by the rounds only.
	ratePerMs float64 // calls asked per millisecond, smoothed
	dropped   bool    // unloaded: the next round returns what it holds and forgets it
	// spent is the passes the engine made in the last window on ended
	// leases and on credit, for a fallback to start from.
	spent []spentLease
	// used is the passes of the window, all engines together, as the
	// count last said, at usedAtMs.
	used, usedAtMs int64
}

// spentLease is the passes made on an ended lease, all by endMs.
type spentLease struct{ endMs, passes int64 }

// clusterLease is passes leased for one bucket of the shared count, to be
// spent from startMs until endMs (the engine's clock).
type clusterLease struct {
	bucket         int64
	startMs, endMs int64
	granted, left  atomic.Int64
}

// clusterFallback is how a cluster rule decides while the count is
// unreachable: every call passes, none does, or a local limit.
type clusterFallback struct {
	mode  ClusterFallback
	local *localLimit
	// made counts the passes made by the fallback, charged to the count
	// when it answers again, as made since sinceMs.
	made    atomic.Int64
	sinceMs int64
	// most bounds what is charged: the passes of a window at most.
	most int64
}

func newClusterShare(rule FlowRule) *clusterShare {
	s := &clusterShare{rule: rule, fallbackBlocked: newBlockError(ReasonClusterFallback, rule.Name)}
	s.engines.Store(1)
	s.creditCap.Store(creditCap(rule, 1))
	s.idle.Store(true)
	return s
}

// creditCap is how many passes a rule's engine may make on credit per
// round: its share of one bucket, one at least.
func creditCap(rule FlowRule, engines int64) int64 {
	return max(int64(rule.Threshold)/(ClusterBuckets*max(engines, 1)), 1)
}

// clusterRejoin is a local fallback's limit kept for two windows after
// the count answers again. The count learns of the passes the engines
// made falling back only as each of them reaches it again, and then as if
// spread evenly over the window before: an engine back first would be
// granted, by a count that does not hold them yet or holds them in the
// wrong buckets, what the others passed. Held to its fallback threshold as
// well as to its leases, as every engine still falling back is, it passes
// at most its share in any window until the count holds every engine's
// passes where they were made: two windows, for engines that find the
// count again within a window of each other.
type clusterRejoin struct {
	local   *localLimit
	untilMs int64
}

// take decides whether count calls may pass at nowMs.
func (s *clusterShare) take(nowMs, count int64) bool {
	s.asked.Add(count)
	if f := s.fallback.Load(); f != nil {
		return f.take(nowMs, count)
	}
	r := s.rejoin.Load()
	if r != nil && nowMs >= r.untilMs {
		s.rejoin.CompareAndSwap(r, nil)
		r = nil
	}
	l, ok := s.takeShared(nowMs, count)
	if !ok || r == nil || r.local.take(nowMs, count) {
		return ok
	}
	// Refused by the fallback's limit: the passes taken go back.
	if l != nil {
		l.left.Add(count)
	} else {
		s.credit.Add(-count)
	}
	return false
}

// takeShared decides count calls on the shared count at nowMs, and
// returns the lease they were taken from: nil if on credit.
func (s *clusterShare) takeShared(nowMs, count int64) (*clusterLease, bool) {
	l := s.lease.Load()
	if l == nil || nowMs >= l.endMs || nowMs < l.startMs {
		if l = s.advance(nowMs); l == nil {
			return nil, s.onCredit(count)
		}
		if nowMs >= l.endMs || nowMs < l.startMs {
			// Between the end of one bucket's lease and the start of
			// the next's, a fraction of a millisecond apart.
			return nil, false
		}
	}
	if l.left.Add(-count) >= 0 {
		return l, true
	}
	l.left.Add(count)
	return nil, false
}

// onCredit decides count calls with no lease held nor asked for. If the
// rule was idle they pass up to creditCap a round, charged to the count by
// the next round.
func (s *clusterShare) onCredit(count int64) bool {
	if !s.idle.Load() {
		return false
	}
	if s.credit.Add(count) <= s.creditCap.Load() {
		return true
	}
	s.credit.Add(-count)
	return false
}

// advance makes the lease asked ahead current once the current one ended,
// and returns the lease for now or, ahead of its start, the next one; nil
// if there is neither. The ended leases are retired for the next round to
// return what they left.
func (s *clusterShare) advance(nowMs int64) *clusterLease {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lease.Load()
	if l != nil && nowMs < l.endMs {
		return l
	}
	n := s.next.Load()
	if n == nil {
		return nil // the ended lease waits for the round to retire it
	}
	if nowMs < n.startMs {
		return n
	}
	if l != nil {
		s.retired = append(s.retired, l)
	}
	s.next.Store(nil)
	if nowMs >= n.endMs { // answered too late to be spent
		s.retired = append(s.retired, n)
		s.lease.Store(nil)
		return nil
	}
	s.lease.Store(n)
	return n
}

// settle takes from s what a round gives back at nowMs: the leftovers of
// the leases that ended, every lease if s was dropped.
func (s *clusterShare) settle(nowMs int64, returns []ClusterReturn) []ClusterReturn {
	s.advance(nowMs)
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.lease.Load(); l != nil && (s.dropped || nowMs >= l.endMs) {
		s.retired = append(s.retired, l)
		s.lease.Store(nil)
	}
	if n := s.next.Load(); n != nil && s.dropped {
		s.retired = append(s.retired, n)
		s.next.Store(nil)
	}
	for _, l := range s.retired {
		// A call that read the lease before it ended and spends after the
		// swap finds none left and is blocked.
		unused := max(l.left.Swap(0), 0)
		if unused > 0 {
			returns = append(returns, ClusterReturn{Key: s.rule.Name, Bucket: l.bucket, Unused: unused})
		}
		if passes := l.granted.Load() - unused; passes > 0 {
			s.spent = append(s.spent, spentLease{endMs: min(l.endMs, nowMs), passes: passes})
		}
	}
	s.retired = s.retired[:0]
	s.spent = slices.DeleteFunc(s.spent, func(p spentLease) bool { return p.endMs <= nowMs-s.rule.StatIntervalMs })
	return returns
}

// grant adds a lease the count answered at nowMs, for the coming bucket
// or the current one. An answer to an ask that wanted nothing only says
// how many engines share the rule: a rule with no lease passes its next
// calls on credit, while a rule that wanted and got nothing blocks.
func (s *clusterShare) grant(nowMs int64, lease ClusterLease, next, wanted bool) {
	engines := int64(max(lease.Engines, 1))
	s.engines.Store(engines)
	s.creditCap.Store(creditCap(s.rule, engines))
	s.used, s.usedAtMs = lease.Used, nowMs
	if !wanted {
		return
	}
	s.idle.Store(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	slot := &s.lease
	if next {
		slot = &s.next
	}
	if l := slot.Load(); l != nil && l.bucket == lease.Bucket {
		l.granted.Add(lease.Granted)
		l.left.Add(lease.Granted)
		return
	}
	startMs, endMs := nowMs+lease.StartsInMs, nowMs+lease.EndsInMs
	if cur := s.lease.Load(); next && cur != nil && cur.bucket == lease.Bucket-1 {
		// The buckets abut: the next starts where the current ends, as
		// the answers place it, which their latencies place a little
		// apart, leaving calls between them with no lease.
		startMs, endMs = cur.endMs, cur.endMs+endMs-startMs
	}
	l := &clusterLease{bucket: lease.Bucket, startMs: startMs, endMs: endMs}
	l.granted.Store(lease.Granted)
	l.left.Store(lease.Granted)
	if old := slot.Swap(l); old != nil {
		s.retired = append(s.retired, old)
	}
}

// fallBack has s decide by its clusterFallback from nowMs on, if it does
// not already.
func (s *clusterShare) fallBack(nowMs int64) {
	if s.fallback.Load() != nil {
		return
	}
	f := &clusterFallback{mode: s.rule.ClusterFallback, most: int64(s.rule.Threshold), sinceMs: nowMs}
	if f.mode == FallbackLocal {
		f.most = int64(s.fallbackThreshold())
		f.local = newLocalLimit(s.fallbackThreshold(), s.rule.StatIntervalMs)
		// The window's passes so far count against the fallback
		// threshold, so that the switch does not double them: the
		// engine's own, when they were made, and its share of all the
		// engines' (as many as its threshold is of the rule's), if more,
		// as made now.
		var own int64
		for _, p := range s.spent {
			f.local.add(p.endMs, p.passes)
			own += p.passes
		}
		if l := s.lease.Load(); l != nil {
			spent := l.granted.Load() - max(l.left.Load(), 0)
			f.local.add(nowMs, spent)
			own += spent
		}
		if s.usedAtMs > nowMs-s.rule.StatIntervalMs && s.rule.Threshold > 0 {
			share := int64(float64(s.used) * float64(f.most) / s.rule.Threshold)
			f.local.add(nowMs, share-own)
		}
	}
	s.fallback.Store(f)
}

// fallbackThreshold is the threshold a local fallback holds the engine's
// traffic to.
func (s *clusterShare) fallbackThreshold() float64 {
	if t := s.rule.ClusterFallbackThreshold; t > 0 {
		return t
	}
	return s.rule.Threshold / float64(max(s.engines.Load(), 1))
}

func (f *clusterFallback) take(nowMs, count int64) bool {
	switch f.mode {
	case FallbackPass:
	case FallbackBlock:
		return false
	default:
		if !f.local.take(nowMs, count) {
			return false
		}
	}
	f.made.Add(count)
	return true
}

// owed is what the fallback's passes charge to the count when it answers
// again at nowMs, and the span they were made over: those of the last
// window, which a local fallback holds to its threshold, and a pass
// fallback to the rule's, at most.
func (f *clusterFallback) owed(nowMs, intervalMs int64) (passes, spanMs int64) {
	return min(f.made.Load(), f.most), min(max(nowMs-f.sinceMs, 0), intervalMs)
}

// localLimit holds passes to a capacity in any window of intervalMs, on a
// count and pass log of its own.
type localLimit struct {
	capacity, intervalMs int64
	passes               atomic.Int64
	log                  *window.PassLog
}

func newLocalLimit(threshold float64, intervalMs int64) *localLimit {
	capacity := int64(threshold)
	return &localLimit{capacity: capacity, intervalMs: intervalMs, log: window.NewPassLog(capacity, capacity, 0, 0)}
}

// add counts passes made by atMs, at or after those added before.
func (l *localLimit) add(atMs, passes int64) {
	if passes > 0 {
		l.log.Mark(atMs, l.passes.Add(passes))
	}
}

func (l *localLimit) take(nowMs, count int64) bool {
	for {
		seen := l.passes.Load()
		if !l.log.Admits(seen, count, l.capacity, nowMs-l.intervalMs) {
			return false
		}
		if l.passes.CompareAndSwap(seen, seen+count) {
			l.log.Mark(nowMs, seen+count)
			return true
		}
	}
}
