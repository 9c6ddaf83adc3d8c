package engine

import (
	"math"
	"time"
)

// Bounds of the keyed rules of one resource: an Entry holds the keys
// whose calls in flight it counts, at most one of a hotspot rule and one
// of a flow rule with a limitApp.
const (
	maxHotspotPerResource = 16
	maxHeldKeys           = 2
)

// keySource is where a keyed rule finds a call's key.
type keySource int

const (
	keyParam       keySource = iota // a hotspot rule: its paramKey's value
	keyOrigin                       // limitApp an origin: that origin
	keyOtherOrigin                  // limitApp other: an origin no rule names
)

// keyedChecker is a loaded rule that counts per key, and its keys'
// statistics, kept across loads that keep the rule equal: a hotspot rule
// (per value of its parameter) or a flow rule with a limitApp (per
// origin), the latter described as the hotspot rule it amounts to.
type keyedChecker struct {
	rule          HotspotRule
	source        keySource
	blocked       *BlockError
	shadow        bool
	concurrency   bool
	throttling    bool
	burst         float64 // > 0: a token bucket per value
	logs          bool    // a reject rule without burst: its values log their passes
	intervalNs    float64
	maxQueueingNs int64
	values        *keyedTable
}

func newHotspotChecker(rule HotspotRule) *keyedChecker {
	c := &keyedChecker{
		rule:          rule,
		blocked:       &BlockError{reason: ReasonHotspot, rule: rule.Name},
		shadow:        rule.Mode == ModeShadow,
		concurrency:   rule.Metric == MetricConcurrency,
		throttling:    rule.ControlBehavior == BehaviorThrottling,
		burst:         float64(rule.BurstCount),
		logs:          rule.Metric != MetricConcurrency && rule.ControlBehavior != BehaviorThrottling && rule.BurstCount == 0,
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
		case c.logs:
			v.log.Init(int64(threshold), int64(threshold), 0, 0)
		}
		return v
	})
	return c
}

// newOriginChecker returns the per-origin checker of a flow rule whose
// limitApp is not default.
func newOriginChecker(rule FlowRule, blocked *BlockError) *keyedChecker {
	capacity, source := int64(maxOriginsTracked), keyOtherOrigin
	if rule.LimitApp != LimitAppOther {
		capacity, source = 1, keyOrigin
	}
	c := newHotspotChecker(HotspotRule{Name: rule.Name, Resource: rule.Resource, Mode: rule.Mode, ParamKey: rule.LimitApp,
		Metric: rule.Metric, Threshold: rule.Threshold, StatIntervalMs: rule.StatIntervalMs, ControlBehavior: rule.ControlBehavior,
		MaxQueueingTimeMs: rule.MaxQueueingTimeMs, ParamsMaxCapacity: capacity, ExpiresAtMs: rule.ExpiresAtMs})
	c.source, c.blocked = source, blocked
	return c
}

// key returns the key of a call with opts from origin that c limits,
// false if c does not limit the call; named are the origins the flow
// rules of the resource name.
func (c *keyedChecker) key(opts []EntryOption, origin string, named map[string]struct{}) (string, bool) {
	switch c.source {
	case keyParam:
		return paramOf(opts, c.rule.ParamKey)
	case keyOrigin:
		return origin, origin == c.rule.ParamKey
	}
	_, isNamed := named[origin]
	return origin, origin != "" && !isNamed
}

// check decides whether count calls with key may pass rule c at nowMs.
// It returns the value whose passes it numbered, for the caller to mark
// (a reject rule's), or whose calls in flight it holds (a concurrency
// rule's, counted already: held).
func (c *keyedChecker) check(r *Resource, nowMs, count int64, key string) (ok bool, waitNs int64, v *keyedValue, held bool) {
	v = c.values.get(key, nowMs)
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
	// The passes are numbered as they are admitted, by compare-and-swap:
	// two calls on one value at once cannot both take its last room. The
	// caller marks them (enterKeyed), whatever becomes of the call.
	for {
		total := v.state.Load()
		ok = v.log.Admits(total, count, int64(v.threshold), sinceMs)
		switch {
		case !ok && !c.shadow:
			return false, 0, nil, false
		case ok && !v.state.CompareAndSwap(total, total+count):
			continue
		case !ok: // a shadow block: the call goes, and counts
			v.state.Add(count)
		}
		return ok, 0, v, false
	}
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

// enterKeyed decides more.keyed for count calls with opts from origin at
// nowMs. If they pass, it records the pass of each key that logs them and
// returns the keys whose calls in flight the entry now holds, and the
// longest wait; otherwise the rule that blocks.
func enterKeyed(r *Resource, more *moreRules, nowMs, count int64, opts []EntryOption, origin string) (held [maxHeldKeys]*keyedValue, waitNs int64, shadowBlocked bool, blocked *BlockError) {
	// The keys to log once every rule passed, on the stack; past
	// maxLogged rules, the key is found again.
	const maxLogged = 16
	var logged [maxLogged]*keyedValue
	h := 0
	for i, c := range more.keyed {
		key, limited := c.key(opts, origin, more.namedOrigins)
		if !limited {
			continue
		}
		ok, w, v, holds := c.check(r, nowMs, count, key)
		switch {
		case holds:
			held[h] = v
			h++
		case v != nil && i < maxLogged:
			logged[i] = v
		}
		switch {
		case !ok && c.shadow:
			shadowBlocked = true
		case !ok:
			release(held, count)
			// The passes numbered already are marked even so: a log
			// waits for the marks of the passes it numbered.
			markLogged(more, logged[:min(i, maxLogged)], i, nowMs, opts, origin)
			return [maxHeldKeys]*keyedValue{}, 0, false, c.blocked
		case w > waitNs && !c.shadow:
			waitNs = w
		}
	}
	markLogged(more, logged[:min(len(more.keyed), maxLogged)], len(more.keyed), nowMs, opts, origin)
	return held, waitNs, shadowBlocked, nil
}

// markLogged marks at nowMs the passes that the first n keyed rules of
// more numbered: those of logged, and past it those of the values found
// again.
func markLogged(more *moreRules, logged []*keyedValue, n int, nowMs int64, opts []EntryOption, origin string) {
	for _, v := range logged {
		if v != nil {
			v.log.Mark(nowMs, v.state.Load())
		}
	}
	for _, c := range more.keyed[len(logged):n] {
		if key, limited := c.key(opts, origin, more.namedOrigins); limited && c.logs {
			v := c.values.get(key, nowMs)
			v.log.Mark(nowMs, v.state.Load())
		}
	}
}

// release ends count calls in flight of each held value.
func release(held [maxHeldKeys]*keyedValue, count int64) {
	for _, v := range held {
		if v != nil {
			v.inFlight.Add(-count)
		}
	}
}
