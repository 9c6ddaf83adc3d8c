package engine

// Tally counts count calls (values below 1 count as 1) that a decider
// outside the engine let through (passed) or refused, as Entry would have
// counted them: in the resource's statistics, and, when passed, in the
// windows of the flow rules that count its passes, so that its own rules
// see every call made on it. The resource's rules are not asked and its
// hotspot values are not counted. It is for callers that decide some calls
// on a limit of their own, such as the rate limit service's per-request
// overrides, and must still show them on the resource. A passed call is
// not in flight: nothing is to be released.
func (r *Resource) Tally(passed bool, count int64) {
	if r == nil {
		return
	}
	r = r.current()
	count = max(count, 1)
	now := r.now()
	if !passed {
		r.recordBlock(now, count, nil)
		return
	}
	rs := r.rules.Load()
	// Claimed after Open, as Entry claims its passes, so that the
	// statistics count them in this call's span.
	if r.second.Open(now) {
		r.sampleInFlight(now)
	}
	var total int64
	if len(rs.feeds) > 0 {
		total = r.passes().Add(count)
	}
	r.recordPass(now, now, count, total, true, false, rs.feeds)
}
