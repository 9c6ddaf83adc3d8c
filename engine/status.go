package engine

import "math"

// Status is what a call learns of the limit it came nearest to: the rule,
// its threshold and window, the calls that still fit and when the window
// has room for more; for Envoy's rate limit answers and the RateLimit
// headers of HTTP responses (Resource.Status).
//
// The rules read are the enforced qps rules that count passes in a window
// (reject flow rules on the resource's own traffic, hotspot reject rules
// per value, cluster rules); Known is false when none applies. Of several,
// the one with the fewest calls left is given. Resource.ShadowStatus reads
// the shadow rules of those kinds instead.
type Status struct {
	// Rule is the rule's name.
	Rule string
	// Limit is the rule's threshold (a hotspot rule's for the call's
	// value), per IntervalMs.
	Limit      int64
	IntervalMs int64
	// Remaining is how many more calls fit in the window now. For a
	// cluster rule, it is what this engine holds of the shared count: at
	// least that many remain.
	Remaining int64
	// ResetMs is how long until the window has room for more: after a
	// call that passed, until the oldest pass it counts leaves it (0 when
	// it counts none); after a blocked call, until a call of its count
	// fits, which is what a Retry-After says.
	ResetMs int64
	Known   bool
}

// Status returns the status of the limit nearest to a call with opts
// (its count, origin and params) that has just passed, or was blocked,
// as the resource's rules see it now. It reads the windows rather than
// the decision, so calls in between are counted too, and searches them:
// it is for callers that answer with it, not for every call.
func (r *Resource) Status(blocked bool, opts ...EntryOption) Status {
	return r.status(blocked, false, opts)
}

// ShadowStatus is Status of the shadow rules alone, for a call with opts
// that has just passed: the limit it would have come nearest to had they
// been enforced, with Remaining 0 once over it. It is for answers that
// report a shadow limit where no enforced one applies, as Envoy's rate
// limit service does for its shadow_mode limits; a RateLimit header or a
// Retry-After must not say it, since the limit refuses nothing.
func (r *Resource) ShadowStatus(opts ...EntryOption) Status {
	return r.status(false, true, opts)
}

// status is Status of the rules whose shadow mode is shadow.
func (r *Resource) status(blocked, shadow bool, opts []EntryOption) Status {
	var s Status
	if r == nil {
		return s
	}
	r = r.current()
	rs := r.rules.Load()
	nowMs := r.now()
	count, origin := int64(1), ""
	for _, o := range opts {
		if o.count > 1 {
			count = o.count
		}
		if o.origin != "" {
			origin = o.origin
		}
	}
	flow := rs.flow
	if rs.more != nil {
		flow = rs.more.flowAll
	}
	for _, c := range flow {
		if c.shadow() != shadow || (c.expiresAtMs() != 0 && nowMs >= c.expiresAtMs()) {
			continue
		}
		switch {
		case c.cluster() != nil:
			var left, resetMs int64
			if l := c.cluster().lease.Load(); l != nil && l.endMs > nowMs {
				left, resetMs = l.left.Load(), l.endMs-nowMs
			}
			s.offer(c.ruleName(), c.threshold, c.intervalMs, left, resetMs)
		case c.passes != nil && c.throttle() == nil && c.warmUp() == nil && c.perOrigin() == nil && !c.inFlight:
			capacity := int64(c.threshold)
			total := c.stat.passes().Load()
			since := nowMs - c.intervalMs - c.stat.slackMs(c.intervalMs)
			left := c.passes.Room(total, capacity, since)
			atMs, known := c.passes.FreeAtMs(total, want(left, count, capacity, blocked), capacity)
			s.offer(c.ruleName(), c.threshold, c.intervalMs, left, resetAfter(atMs, known, nowMs, since))
		}
	}
	if rs.more == nil {
		return s
	}
	for _, c := range rs.more.keyed {
		if c.shadow != shadow || !c.logs || c.source != keyParam || (c.rule.ExpiresAtMs != 0 && nowMs >= c.rule.ExpiresAtMs) {
			continue
		}
		key, ok := c.key(opts, origin, nil)
		if !ok {
			continue
		}
		v := c.values.get(key, nowMs)
		capacity, perMark, marks := int64(c.thresholds[v.item]), c.perMark[v.item], v.ring()
		total := v.state.Load()
		since := nowMs - c.rule.StatIntervalMs - r.slackMs(c.rule.StatIntervalMs)
		left := v.log.Room(perMark, marks, total, capacity, since)
		atMs, known := v.log.FreeAtMs(perMark, marks, total, want(left, count, capacity, blocked), capacity)
		s.offer(c.rule.Name, c.thresholds[v.item], c.rule.StatIntervalMs, left, resetAfter(atMs, known, nowMs, since))
	}
	return s
}

// want is the calls whose room a status's reset waits for: one more than
// fit now, or, after a block, the blocked call's count; 0 when the window
// counts no pass.
func want(left, count, capacity int64, blocked bool) int64 {
	switch {
	case blocked:
		return count
	case left >= capacity:
		return 0
	}
	return left + 1
}

// offer makes s the status of a rule with left calls to go, if it has
// fewer than the rule s holds.
func (s *Status) offer(rule string, threshold float64, intervalMs, left, resetMs int64) {
	if s.Known && (left > s.Remaining || left == s.Remaining && resetMs <= s.ResetMs) {
		return
	}
	*s = Status{Rule: rule, Limit: int64(threshold), IntervalMs: intervalMs, Remaining: left, ResetMs: resetMs, Known: true}
}

// resetAfter returns how long after nowMs a window that starts at since
// now leaves out the pass of atMs (FreeAtMs's answer): 0 for one out
// already, the whole window for one not marked yet.
func resetAfter(atMs int64, known bool, nowMs, since int64) int64 {
	switch {
	case !known:
		return nowMs - since
	case atMs == math.MinInt64 || atMs <= since:
		return 0
	}
	return atMs - since
}
