package engine

import (
	"cmp"
	"slices"

	"github.com/sluicehq/sluice/engine/window"
)

// flowChecker is a loaded flow rule: its decision state (pass log,
// throttling slot, warm-up tokens) survives reloads that keep the rule equal.
type flowChecker struct {
	rule        FlowRule
	blocked     *BlockError
	shadow      bool
	concurrency bool

	// stat is the resource whose traffic the rule measures: its own or, for
	// associated rules, refResource.
	stat *Resource
	// passes logs stat's passes for the rule (they are fed to it, see
	// ruleSet.feeds); nil for rules that count calls in flight or only
	// space passes (throttling without warm-up).
	passes *window.PassLog

	throttle *throttler
	warmUp   *warmUp
}

func newFlowChecker(rule FlowRule, stat *Resource, nowMs int64) *flowChecker {
	c := &flowChecker{
		rule:        rule,
		shadow:      rule.Mode == ModeShadow,
		concurrency: rule.Metric == MetricConcurrency,
		stat:        stat,
	}
	reason := ReasonFlow
	if c.concurrency {
		reason = ReasonConcurrency
	}
	c.blocked = &BlockError{reason: reason, rule: rule.Name}
	if c.concurrency {
		return c
	}
	warm := rule.TokenCalculateStrategy == StrategyWarmUp
	switch {
	case rule.ControlBehavior == BehaviorThrottling:
		c.throttle = newThrottler(rule.StatIntervalMs, rule.MaxQueueingTimeMs)
		if warm {
			c.passes = window.NewPassLog(0, 0) // counted for the warm-up only
		}
	case warm: // decides on capacities from the cold rate up
		c.passes = window.NewPassLog(int64(rule.Threshold/float64(rule.WarmUpColdFactor)), int64(rule.Threshold))
	default:
		c.passes = window.NewPassLog(int64(rule.Threshold), int64(rule.Threshold))
	}
	if c.passes != nil {
		seed(c.passes, stat, rule.StatIntervalMs, nowMs)
	}
	if warm {
		c.warmUp = newWarmUp(rule, nowMs, c.passes)
	}
	return c
}

// seed records in a new rule's log the passes of stat's second window that
// may still be in the rule's interval, each at the end of its bucket (the
// latest it can have been), so that a rule loaded on a busy resource, or
// loaded again with a new threshold, does not start from zero. Passes
// older than the second window are not known; a longer interval starts
// with the last second's.
func seed(log *window.PassLog, stat *Resource, intervalMs, nowMs int64) {
	type span struct{ endMs, passes int64 }
	var spans []span
	win := &stat.second
	bucketMs := win.BucketLenMs()
	for i := range win.Len() {
		b := win.At(i)
		start, passes := b.StartMs(), b.Get(window.Pass)
		if passes > 0 && start > nowMs-intervalMs-bucketMs && start <= nowMs {
			spans = append(spans, span{min(start+bucketMs-1, nowMs), passes})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.endMs, b.endMs) })
	for _, s := range spans {
		log.Record(s.endMs, s.passes)
	}
}

// check decides whether count calls to self may pass at nowMs. inFlight is
// self's concurrency including this call when the rule set reserves it.
// A throttled pass returns how long it must wait, in nanoseconds.
func (c *flowChecker) check(self *Resource, nowMs, count, inFlight int64) (ok bool, waitNs int64) {
	threshold := c.rule.Threshold
	if c.concurrency {
		if c.stat != self {
			inFlight = c.stat.concurrency.Load() + count
		}
		return float64(inFlight) <= threshold, 0
	}
	if c.warmUp != nil {
		threshold = c.warmUp.allowed(nowMs)
	}
	if c.throttle != nil {
		return c.throttle.check(nowMs, count, threshold)
	}
	// A pass is recorded at the clock's reading, which may lag its real
	// time by the clock's slack: a rule on its own resource's passes holds
	// each that much longer, so that no real window of the interval sees
	// more than the threshold. An associated rule limits calls that its
	// window does not count: it reads the passes as they were recorded.
	sinceMs := nowMs - c.rule.StatIntervalMs
	if c.stat == self {
		sinceMs -= self.slackMs()
	}
	return c.passes.Admits(count, int64(threshold), sinceMs), 0
}
