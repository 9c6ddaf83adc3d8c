package engine

import (
	"github.com/sluicehq/sluice/engine/window"
)

// flowChecker is a loaded flow rule: its decision state (throttling slot,
// warm-up tokens, its own window) survives reloads that keep the rule equal.
type flowChecker struct {
	rule    FlowRule
	blocked *BlockError
	shadow  bool

	// owner is the rule's resource; stat is the resource whose traffic it
	// measures: the owner or, for associated rules, refResource.
	owner *Resource
	stat  *Resource
	// win counts stat's passes over the rule's interval: stat's second
	// window, or a window of the rule's own fed by stat (ownWindow).
	win       *window.LeapArray
	ownWindow bool

	concurrency bool
	throttle    *throttler
	warmUp      *warmUp
}

func newFlowChecker(rule FlowRule, owner, stat *Resource, nowMs int64) *flowChecker {
	c := &flowChecker{
		rule:        rule,
		owner:       owner,
		shadow:      rule.Mode == ModeShadow,
		stat:        stat,
		win:         &stat.second,
		concurrency: rule.Metric == MetricConcurrency,
	}
	reason := ReasonFlow
	if c.concurrency {
		reason = ReasonConcurrency
	}
	c.blocked = &BlockError{reason: reason, rule: rule.Name}
	if !c.concurrency && rule.StatIntervalMs != secondIntervalMs {
		c.win, c.ownWindow = &window.LeapArray{}, true
		mustInit(c.win, sampleCountFor(rule.StatIntervalMs), rule.StatIntervalMs, nil)
	}
	if rule.ControlBehavior == BehaviorThrottling {
		c.throttle = newThrottler(rule.StatIntervalMs, rule.MaxQueueingTimeMs)
	}
	if rule.TokenCalculateStrategy == StrategyWarmUp {
		c.warmUp = newWarmUp(rule, nowMs)
	}
	return c
}

// sampleCountFor picks the most buckets, up to 10, that divide intervalMs
// evenly; decisions stay exact with fewer buckets, only less generous.
func sampleCountFor(intervalMs int64) int {
	for n := int64(secondSamples); n > 1; n-- {
		if intervalMs%n == 0 {
			return int(n)
		}
	}
	return 1
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
		threshold = c.warmUp.allowed(nowMs, c.win)
	}
	if c.throttle != nil {
		return c.throttle.check(nowMs, count, threshold)
	}
	// A pass is recorded at the clock's reading, which may lag its real
	// time by the clock's slack: hold every pass that much longer, so that
	// no real window of the interval sees more than the threshold.
	return float64(c.win.DecisionPasses(nowMs-self.slackMs())+count) <= threshold, 0
}
