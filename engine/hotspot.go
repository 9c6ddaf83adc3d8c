package engine

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/engine/window"
)

// Bounds of the hotspot rules of one resource: an Entry decides them with
// their values on its stack, and holds the values whose calls in flight it
// counts.
const (
	maxHotspotPerResource = 16
	maxHeldKeys           = 2
)

// hotspotChecker is a loaded hotspot rule and its values' statistics,
// kept across loads that keep the rule equal.
type hotspotChecker struct {
	rule          HotspotRule
	blocked       *BlockError
	shadow        bool
	concurrency   bool
	throttling    bool
	burst         float64 // > 0: a token bucket per value
	intervalNs    float64
	maxQueueingNs int64
	values        *keyedTable
}

func newHotspotChecker(rule HotspotRule) *hotspotChecker {
	c := &hotspotChecker{
		rule:          rule,
		blocked:       &BlockError{reason: ReasonHotspot, rule: rule.Name},
		shadow:        rule.Mode == ModeShadow,
		concurrency:   rule.Metric == MetricConcurrency,
		throttling:    rule.ControlBehavior == BehaviorThrottling,
		burst:         float64(rule.BurstCount),
		intervalNs:    float64(rule.StatIntervalMs * int64(time.Millisecond)),
		maxQueueingNs: rule.MaxQueueingTimeMs * int64(time.Millisecond),
	}
	c.values = newKeyedTable(int(rule.ParamsMaxCapacity), func(key string) *keyedValue {
		threshold := rule.Threshold
		if t, ok := rule.SpecificItems[key]; ok {
			threshold = t
		}
		v := &keyedValue{threshold: threshold}
		switch {
		case c.concurrency:
		case c.throttling:
			v.state.Store(math.MinInt64 / 2)
		case c.burst == 0:
			v.log = window.NewPassLog(int64(threshold), int64(threshold), 0, 0)
		}
		return v
	})
	return c
}

// check decides whether count calls with the values of opts may pass rule
// c at nowMs. It returns the value whose pass the caller records once
// every rule passed (a reject rule's), or whose calls in flight it holds
// (a concurrency rule's, counted already: held).
func (c *hotspotChecker) check(r *Resource, nowMs, count int64, opts []EntryOption) (ok bool, waitNs int64, v *keyedValue, held bool) {
	param, given := paramOf(opts, c.rule.ParamKey)
	if !given {
		return true, 0, nil, false
	}
	v = c.values.get(param, nowMs)
	switch {
	case c.concurrency:
		ok = float64(v.inFlight.Add(count)) <= v.threshold
		if ok || c.shadow { // a shadow block lets the call go: it is in flight
			return ok, 0, v, true
		}
		v.inFlight.Add(-count)
		return false, 0, nil, false
	case c.throttling:
		ok, waitNs = throttle(&v.state, c.intervalNs, c.maxQueueingNs, nowMs, count, v.threshold)
		return ok, waitNs, nil, false
	case c.burst > 0:
		return v.takeTokens(nowMs, count, c.burst, c.intervalNs), 0, nil, false
	}
	// As a flow rule does: the passes were recorded at the clock's
	// reading, which may lag real time by its slack.
	sinceMs := nowMs - c.rule.StatIntervalMs - r.slackMs(c.rule.StatIntervalMs)
	return v.log.Admits(v.state.Load(), count, int64(v.threshold), sinceMs), 0, v, false
}

// takeTokens takes count tokens from the value's bucket of threshold+burst
// tokens, refilled by threshold per interval (GCRA: one theoretical
// arrival time, moved by compare-and-swap).
func (v *keyedValue) takeTokens(nowMs, count int64, burst, intervalNs float64) bool {
	if v.threshold <= 0 {
		return false
	}
	emissionNs := intervalNs / v.threshold
	costNs := float64(count) * emissionNs
	if costNs > maxSlotNs {
		return false
	}
	toleranceNs := (v.threshold + burst) * emissionNs
	now := nowMs * int64(time.Millisecond)
	for {
		tat := v.state.Load()
		next := max(tat, now) + int64(costNs)
		if float64(next-now) > toleranceNs {
			return false
		}
		if v.state.CompareAndSwap(tat, next) {
			return true
		}
	}
}

// enterHotspot decides rules, the hotspot rules of r, for count calls
// with opts at nowMs. If they pass, it records the pass of each value
// that logs them and returns the values whose calls in flight the entry
// now holds, and the longest wait; otherwise the rule that blocks.
func enterHotspot(r *Resource, rules []*hotspotChecker, nowMs, count int64, opts []EntryOption) (held [maxHeldKeys]*keyedValue, waitNs int64, shadowBlocked bool, blocked *BlockError) {
	var logged [maxHotspotPerResource]*keyedValue
	h := 0
	for i, c := range rules {
		ok, w, v, holds := c.check(r, nowMs, count, opts)
		if holds {
			held[h] = v
			h++
		} else {
			logged[i] = v
		}
		switch {
		case !ok && c.shadow:
			shadowBlocked = true
			logged[i] = nil
		case !ok:
			release(held, count)
			return [maxHeldKeys]*keyedValue{}, 0, false, c.blocked
		case w > waitNs && !c.shadow:
			waitNs = w
		}
	}
	for _, v := range logged[:len(rules)] {
		if v != nil {
			v.log.Mark(nowMs, v.state.Add(count))
		}
	}
	return held, waitNs, shadowBlocked, nil
}

// release ends count calls in flight of each held value.
func release(held [maxHeldKeys]*keyedValue, count int64) {
	for _, v := range held {
		if v != nil {
			v.inFlight.Add(-count)
		}
	}
}
