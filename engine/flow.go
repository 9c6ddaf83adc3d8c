package engine

import (
	"cmp"
	"slices"

	"github.com/sluicehq/sluice/engine/window"
)

// flowChecker is a loaded flow rule: its decision state (pass log,
// throttling slot, warm-up tokens) survives reloads that keep the rule equal.
//
// It keeps of the rule what calls read, and the rest, with the state of
// the kinds of rule that are not common (commonFlowRule), only for those:
// a FlowRule is a dozen strings, 248 bytes, which every resource with a
// rule of 100 a second paid. The rule's name is its block error's, and a
// common rule's resource is stat's.
type flowChecker struct {
	threshold  float64
	intervalMs int64
	// inFlight: the rule limits the calls in flight, on all callers'
	// together; shadowMode: its blocks are only counted.
	inFlight, shadowMode bool
	// uncommon is the rest of a rule that rule does not rebuild from the
	// fields above, nil for a common one.
	uncommon *uncommonFlow
	blocked  BlockError

	// stat is the resource whose traffic the rule measures: its own or, for
	// associated rules, refResource.
	stat *Resource
	// passes logs when stat's passes happened, for the rule (they are fed
	// to it, see ruleSet.feeds, and counted meanwhile); nil but for reject
	// rules and warm-ups.
	passes *window.PassLog
}

// uncommonFlow is what a flow checker keeps of a rule that is not a common
// one: the whole rule, and the state of its kind.
type uncommonFlow struct {
	rule     FlowRule
	throttle *throttler
	warmUp   *warmUp
	// perOrigin decides the rule, when its limitApp is not default, on
	// each origin's statistics in place of the checker.
	perOrigin *keyedChecker
	// cluster decides the rule, when its scope is cluster, on leases of
	// the count shared with other engines.
	cluster *clusterShare
}

func newFlowChecker(rule FlowRule, stat *Resource, nowMs int64) *flowChecker {
	reason := ReasonFlow
	if rule.Metric == MetricConcurrency {
		reason = ReasonConcurrency
	}
	c := &flowChecker{threshold: rule.Threshold, intervalMs: rule.StatIntervalMs, shadowMode: rule.Mode == ModeShadow,
		blocked: BlockError{reason: reason, rule: rule.Name, tally: new(blockTally)}, stat: stat}
	if c.rule() != rule {
		c.uncommon = &uncommonFlow{rule: rule}
	}
	// A rule of any kind below is not a common one: x is set.
	x := c.uncommon
	if rule.LimitApp != LimitAppDefault {
		x.perOrigin = newOriginChecker(rule, &c.blocked)
		return c
	}
	c.inFlight = rule.Metric == MetricConcurrency
	if rule.Scope == ScopeCluster {
		x.cluster = newClusterShare(rule)
		return c
	}
	if c.inFlight {
		return c
	}
	warm := rule.TokenCalculateStrategy == StrategyWarmUp
	switch {
	case rule.ControlBehavior == BehaviorThrottling:
		x.throttle = newThrottler(rule.StatIntervalMs, rule.MaxQueueingTimeMs)
		if warm { // no decision to log, but stat must count its passes
			c.passes = window.NewPassLog(0, 0, 0, 0)
		}
	case warm: // decides on capacities from the cold rate up
		c.passes = newPassLog(stat, int64(rule.Threshold/float64(rule.WarmUpColdFactor)), int64(rule.Threshold), rule.StatIntervalMs, nowMs)
	default:
		c.passes = newPassLog(stat, int64(rule.Threshold), int64(rule.Threshold), rule.StatIntervalMs, nowMs)
	}
	if warm {
		x.warmUp = newWarmUp(rule, nowMs, stat.passes())
	}
	return c
}

// newPassLog returns a pass log of stat for capacities least to most that
// knows when the passes of stat's second window that may still be in the
// interval happened: at the end of their bucket at the latest. So a rule
// loaded on a busy resource, or loaded again with a new threshold, does
// not start from zero. Older passes are not known: a longer interval
// starts with the last second's (a quota's knows more: quotaPassLog). The
// caller holds the engine's loadMu.
func newPassLog(stat *Resource, least, most, intervalMs, nowMs int64) *window.PassLog {
	// No block of pass numbers claimed under the log this one replaces
	// is used after it: the numbers given up are counted as passes now.
	unused := stat.second.CloseBlocks(nowMs)
	var spans []window.Marked
	win := &stat.second
	bucketMs := win.BucketLenMs()
	for i := range win.Len() {
		b := win.At(i)
		start, passes := b.StartMs(), b.Get(window.Pass)
		if passes > 0 && start > nowMs-intervalMs-bucketMs && start <= nowMs {
			spans = append(spans, window.Marked{AtMs: min(start+bucketMs-1, nowMs), Passes: passes})
		}
	}
	if unused > 0 {
		spans = append(spans, window.Marked{AtMs: nowMs, Passes: unused})
	}
	return seededPassLog(stat, least, most, intervalMs, spans, nil)
}

// quotaPassLog returns the pass log of c, a quota rule loaded at nowMs,
// that knows the passes still in its window that prior, the checker of
// the rule it replaces, logged, and those of restored, saved before a
// restart: a day's window must not start again from its last second.
func quotaPassLog(c *flowChecker, prior *flowChecker, restored []QuotaWindow, nowMs int64) *window.PassLog {
	sinceMs := nowMs - c.intervalMs
	capacity := int64(c.threshold)
	if prior == nil || prior.passes == nil || prior.stat != c.stat {
		if len(restored) == 0 {
			return c.passes
		}
		prior = nil
	}
	var counted, missed []window.Marked
	if prior != nil {
		// The prior log marked every block of pass numbers claimed
		// under it; none is used after its spans are read.
		c.stat.second.CloseBlocks(nowMs)
		counted = prior.passes.Spans(sinceMs)
	}
	for _, w := range restored {
		missed = append(missed, w.Spans...)
	}
	if counted == nil && prior == nil {
		// No prior log: what the resource's second window knows.
		fresh := newPassLog(c.stat, capacity, capacity, c.intervalMs, nowMs)
		counted = fresh.Spans(sinceMs)
	}
	return seededPassLog(c.stat, capacity, capacity, c.intervalMs, sortedSpans(counted, sinceMs), sortedSpans(missed, sinceMs))
}

// seededPassLog returns a pass log of stat for capacities least to most
// in windows of intervalMs that knows of counted, stat's latest passes,
// and of missed, passes stat's counter never counted (saved before a
// restart), each span marked at its time, oldest first. The caller holds
// the engine's loadMu.
func seededPassLog(stat *Resource, least, most, intervalMs int64, counted, missed []window.Marked) *window.PassLog {
	spans := slices.Concat(counted, missed)
	slices.SortStableFunc(spans, func(a, b window.Marked) int { return cmp.Compare(a.AtMs, b.AtMs) })
	var recent, before int64
	for _, s := range counted {
		recent += s.Passes
	}
	for _, s := range missed {
		before += s.Passes
	}
	// stat counts its passes only while a log reads them (recordPass): if
	// none does, the recent passes are missing from its count.
	total, uncounted := stat.passes().Load(), before
	if len(stat.rules.Load().feeds) == 0 {
		uncounted += recent
	}
	numbered := max(total+uncounted-recent-before, 0) // the passes before the known ones
	log := window.NewPassLogWithin(least, most, numbered, uncounted, stat.horizon(intervalMs))
	for _, s := range spans {
		numbered = min(numbered+s.Passes, total+uncounted)
		log.Mark(s.AtMs, numbered-uncounted)
	}
	return log
}

// commonFlowRule is the rule most flow rules are, but for their name,
// resource, threshold, interval and mode: a rate limit of every caller's
// calls on this engine that rejects the calls over it, with defaults
// filled in.
var commonFlowRule = FlowRule{Threshold: 1}.WithDefaults()

// rule returns c's rule.
func (c *flowChecker) rule() FlowRule {
	if c.uncommon != nil {
		return c.uncommon.rule
	}
	rule := commonFlowRule
	rule.Name, rule.Resource, rule.Threshold, rule.StatIntervalMs = c.ruleName(), c.stat.name, c.threshold, c.intervalMs
	if c.shadowMode {
		rule.Mode = ModeShadow
	}
	return rule
}

// expiresAtMs is when c's rule stops applying, 0 if never.
func (c *flowChecker) expiresAtMs() int64 {
	if c.uncommon == nil {
		return 0
	}
	return c.uncommon.rule.ExpiresAtMs
}

// limitApp is whose calls c's rule counts.
func (c *flowChecker) limitApp() string {
	if c.uncommon == nil {
		return commonFlowRule.LimitApp
	}
	return c.uncommon.rule.LimitApp
}

// throttle returns c's throttling slot, nil if its rule does not throttle.
func (c *flowChecker) throttle() *throttler {
	if c.uncommon == nil {
		return nil
	}
	return c.uncommon.throttle
}

// warmUp returns c's warm-up tokens, nil if its rule does not warm up.
func (c *flowChecker) warmUp() *warmUp {
	if c.uncommon == nil {
		return nil
	}
	return c.uncommon.warmUp
}

// perOrigin returns the checker that decides c's rule per origin, nil if
// its limitApp is default.
func (c *flowChecker) perOrigin() *keyedChecker {
	if c.uncommon == nil {
		return nil
	}
	return c.uncommon.perOrigin
}

// cluster returns c's share of a cluster rule's count, nil if its scope
// is local.
func (c *flowChecker) cluster() *clusterShare {
	if c.uncommon == nil {
		return nil
	}
	return c.uncommon.cluster
}

// commonOn reports whether c is a common reject rule on the passes of r,
// the resource it decides for: Resource.admits decides it as check would.
func (c *flowChecker) commonOn(r *Resource) bool {
	return c.uncommon == nil && !c.inFlight && c.stat == r
}

// ruleName is the name of c's rule.
func (c *flowChecker) ruleName() string { return c.blocked.rule }

// shadow reports whether the rule's blocks are only counted.
func (c *flowChecker) shadow() bool { return c.shadowMode }

// check decides whether count calls to self may pass at nowMs. inFlight is
// self's concurrency including this call when the rule set reserves it;
// selfPasses is self's pass count as this call read it, which the call
// claims once every rule let it through (Resource.Entry).
// A throttled pass returns how long it must wait, in nanoseconds.
func (c *flowChecker) check(self *Resource, nowMs, count, inFlight, selfPasses int64) (ok bool, waitNs int64) {
	x := c.uncommon
	if x != nil && x.cluster != nil {
		// Leases are for buckets of real time, which a cached reading
		// may lag; the engine reads the time itself for them.
		return x.cluster.take(self.realNowMs(nowMs), count), 0
	}
	threshold := c.threshold
	if c.inFlight {
		if c.stat != self {
			inFlight = c.stat.Concurrency() + count
		}
		return float64(inFlight) <= threshold, 0
	}
	if x != nil {
		if x.warmUp != nil {
			threshold = x.warmUp.allowed(nowMs)
		}
		if x.throttle != nil {
			return x.throttle.check(nowMs, count, threshold)
		}
	}
	// A rule on its own resource's passes holds the threshold in every
	// real window (Resource.admits). An associated rule limits calls that
	// its window does not count: it reads the passes as they were recorded.
	if c.stat != self {
		return c.passes.Admits(c.stat.passes().Load(), count, int64(threshold), nowMs-c.intervalMs), 0
	}
	return self.admits(c.passes, selfPasses, count, int64(threshold), nowMs, c.intervalMs), 0
}

// OccupyTimeoutMs is the longest a prioritized call waits for quota
// borrowed from the coming window (WithPrioritized).
const OccupyTimeoutMs = 500

// borrow says how long count prioritized calls must wait for room under
// rule c, which blocks them at nowMs, if c lends and that is at most
// OccupyTimeoutMs: a reject rule on its own resource's passes, counted
// directly. The calls are then recorded at markMs, when their wait ends in
// real time, in the window they borrowed from, so that the threshold holds
// in every window (Sentinel's tryOccupyNext counts them where they were
// asked for).
func (c *flowChecker) borrow(self *Resource, nowMs, count, selfPasses int64) (waitMs, markMs int64, ok bool) {
	if c.throttle() != nil || c.warmUp() != nil || c.passes == nil || c.stat != self {
		return 0, 0, false
	}
	atMs, known := c.passes.FreeAtMs(selfPasses, count, int64(c.threshold))
	if !known {
		return 0, 0, false
	}
	// A pass at atMs is out of the window once since, nowMs less the
	// interval and the clock's slack, reaches it.
	waitMs = max(atMs+c.intervalMs+self.slackMs(c.intervalMs)-nowMs, 0)
	if waitMs > OccupyTimeoutMs {
		return 0, 0, false
	}
	return waitMs, self.realNowMs(nowMs) + waitMs, true
}
