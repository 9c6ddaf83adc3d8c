package engine

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/engine/window"
)

// Bounds of the keyed rules of one resource: an Entry holds the keys
// whose calls in flight it counts, at most one of a hotspot rule and one
// of a flow rule with a limitApp.
const maxHotspotPerResource = 16

// heldKeys are the keys whose calls in flight an entry holds: at most
// two (see the bounds above), as two fields rather than an array, so
// that an Entry is passed and returned in registers.
type heldKeys struct{ first, second *keyedValue }

// add holds v: first, then second.
func (h *heldKeys) add(v *keyedValue) {
	if h.first == nil {
		h.first = v
	} else {
		h.second = v
	}
}

// release ends count calls in flight of each held key.
func (h heldKeys) release(count int64) {
	if h.first != nil {
		h.first.state.Add(-count)
	}
	if h.second != nil {
		h.second.state.Add(-count)
	}
}

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
	// thresholds are the rule's threshold, then its specific items', a
	// value's found at its item; perMark, for a rule whose values log
	// their passes, the group size of their logs (window.LogShape).
	thresholds []float64
	perMark    []int64
	values     *keyedTable
	// hot ranks a hotspot rule's values over the last minute; nil for a
	// flow rule's origins.
	hot *hotSketch
}

func newHotspotChecker(rule HotspotRule) *keyedChecker {
	c := &keyedChecker{
		rule:          rule,
		blocked:       newBlockError(ReasonHotspot, rule.Name),
		shadow:        rule.Mode == ModeShadow,
		concurrency:   rule.Metric == MetricConcurrency,
		throttling:    rule.ControlBehavior == BehaviorThrottling,
		burst:         float64(rule.BurstCount),
		logs:          rule.Metric != MetricConcurrency && rule.ControlBehavior != BehaviorThrottling && rule.BurstCount == 0,
		intervalNs:    float64(rule.StatIntervalMs * int64(time.Millisecond)),
		maxQueueingNs: rule.MaxQueueingTimeMs * int64(time.Millisecond),
		hot:           newHotSketch(),
	}
	c.thresholds = append(make([]float64, 0, 1+len(rule.SpecificItems)), rule.Threshold)
	items := make(map[string]uint32, len(rule.SpecificItems))
	for value, threshold := range rule.SpecificItems {
		items[value] = uint32(len(c.thresholds))
		c.thresholds = append(c.thresholds, threshold)
	}
	rings := make([]int, len(c.thresholds))
	c.perMark = make([]int64, len(c.thresholds))
	for i, threshold := range c.thresholds {
		c.perMark[i] = 1
		if capacity := int64(threshold); c.logs && capacity > 0 {
			c.perMark[i], rings[i] = window.LogShape(capacity, capacity)
		}
	}
	c.values = newKeyedTable(int(rule.ParamsMaxCapacity), c.concurrency, func(key string) *keyedValue {
		item := items[key]
		v := newKeyedValue(key, item, rings[item])
		switch {
		case c.concurrency:
		case c.throttling:
			v.state.Store(math.MinInt64 / 2)
		case c.logs:
			v.log.Init(c.perMark[item])
		}
		return v
	})
	return c
}

// ruleName is the name of c's rule.
func (c *keyedChecker) ruleName() string { return c.rule.Name }

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
	c.source, c.blocked, c.hot = source, blocked, nil
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
// It returns the value whose passes the caller numbers once every rule
// passed (a reject rule's, see number), or whose calls in flight it holds
// (a concurrency rule's, counted already: held).
func (c *keyedChecker) check(r *Resource, nowMs, count int64, key string) (ok bool, waitNs int64, v *keyedValue, held bool) {
	v = c.values.get(key, nowMs)
	threshold := c.thresholds[v.item]
	switch {
	case c.concurrency:
		ok = float64(v.state.Add(count)) <= threshold
		if ok || c.shadow { // a shadow block lets the call go: it is in flight
			return ok, 0, v, true
		}
		v.state.Add(-count)
		return false, 0, nil, false
	case c.throttling:
		ok, waitNs = throttle(&v.state, c.intervalNs, c.maxQueueingNs, nowMs, count, threshold)
		return ok, waitNs, nil, false
	case c.burst > 0:
		return v.takeTokens(nowMs, count, threshold, c.burst, c.intervalNs), 0, nil, false
	}
	total := v.state.Load()
	return c.admits(r, v, v.ring(), nowMs, count, total), 0, v, false
}

// admits reports whether count more passes of v, its log's ring marks,
// fit under c at nowMs, v's passes numbered up to total: as
// Resource.admits decides on a flow rule's log.
func (c *keyedChecker) admits(r *Resource, v *keyedValue, marks []atomic.Uint32, nowMs, count, total int64) bool {
	atMs, known := v.log.FreeAtMs(c.perMark[v.item], marks, total, count, int64(c.thresholds[v.item]))
	return r.roomAfter(atMs, known, nowMs, c.rule.StatIntervalMs)
}

// number numbers count passes of v, and marks them at nowMs, if they
// still fit under c (or c only shadows): by compare-and-swap, so that two
// calls on one value at once cannot both take its last room. It returns
// v's pass count with them, or false if they do not fit (a call took the
// room since check, or, for a rule numbered unchecked, there was none).
func (c *keyedChecker) number(r *Resource, v *keyedValue, nowMs, count int64) (int64, bool) {
	marks := v.ring()
	for {
		total := v.state.Load()
		if !c.admits(r, v, marks, nowMs, count, total) && !c.shadow {
			return total, false
		}
		if v.state.CompareAndSwap(total, total+count) {
			v.log.Mark(c.perMark[v.item], marks, nowMs, total+count)
			return total + count, true
		}
	}
}

// takeTokens takes count tokens from the value's bucket of threshold+burst
// tokens, refilled by threshold per interval (GCRA: one theoretical
// arrival time, moved by compare-and-swap).
func (v *keyedValue) takeTokens(nowMs, count int64, threshold, burst, intervalNs float64) bool {
	if threshold <= 0 {
		return false
	}
	emissionNs := intervalNs / threshold
	costNs := float64(count) * emissionNs
	if costNs > maxSlotNs {
		return false
	}
	toleranceNs := (threshold + burst) * emissionNs
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
// nowMs. If they pass, it numbers and marks the pass of each key that
// logs them and returns the keys whose calls in flight the entry now
// holds, and the longest wait; otherwise the rule that blocks. Each
// hotspot rule that decided counts the value's pass or block in its hot
// sketch once: a rule whose values log their passes, when it numbers
// them (unless it only shadows, which numbers whatever it decided).
//
// The last rule, if its values log their passes and it enforces, is not
// checked before it numbers: numbering checks it anyway, and it numbers
// once the others were checked, before they number, so that its block
// leaves their room as it was. A resource with one such rule, the common
// case, runs only that.
func enterKeyed(r *Resource, more *moreRules, nowMs, count int64, opts []EntryOption, origin string) (held heldKeys, waitNs int64, shadowBlocked bool, blocked *BlockError) {
	rules := more.keyed
	last := rules[len(rules)-1]
	switch {
	case !last.logs || last.shadow:
		return enterChecked(r, more, rules, nil, nowMs, count, opts, origin)
	case len(rules) > 1:
		return enterChecked(r, more, rules[:len(rules)-1], last, nowMs, count, opts, origin)
	}
	if key, limited := last.key(opts, origin, more.namedOrigins); limited && !last.numberCounted(r, last.values.get(key, nowMs), key, nowMs, count) {
		return held, 0, false, last.blocked
	}
	return held, 0, false, nil
}

// enterChecked decides rules, of more, as enterKeyed does, each checked
// first; if every one let the calls through, it numbers the passes of
// unchecked (if not nil, a rule whose values log their passes), then
// those of the values of rules that log theirs.
func enterChecked(r *Resource, more *moreRules, rules []*keyedChecker, unchecked *keyedChecker, nowMs, count int64, opts []EntryOption, origin string) (held heldKeys, waitNs int64, shadowBlocked bool, blocked *BlockError) {
	// The values whose passes to number, on the stack: few resources
	// have more keyed rules than this; past them, the value is found again.
	const maxLogged = 4
	var logged [maxLogged]*keyedValue
	var keys [maxLogged]string
	for i, c := range rules {
		key, limited := c.key(opts, origin, more.namedOrigins)
		if !limited {
			continue
		}
		ok, w, v, holds := c.check(r, nowMs, count, key)
		switch {
		case holds:
			held.add(v)
		case v != nil && i < maxLogged:
			logged[i], keys[i] = v, key
		}
		if c.hot != nil && (!ok || !c.logs || c.shadow) {
			c.hot.record(nowMs, key, count, !ok, rand.Uint64())
		}
		switch {
		case !ok && c.shadow:
			shadowBlocked = true
		case !ok:
			held.release(count)
			return heldKeys{}, 0, false, c.blocked
		case w > waitNs && !c.shadow:
			waitNs = w
		}
	}
	if unchecked != nil {
		key, limited := unchecked.key(opts, origin, more.namedOrigins)
		if limited && !unchecked.numberCounted(r, unchecked.values.get(key, nowMs), key, nowMs, count) {
			held.release(count)
			return heldKeys{}, 0, false, unchecked.blocked
		}
	}
	// Every rule passed: the reject rules' values number their passes
	// now, and only now, so that a blocked call takes no room. A value
	// whose room a concurrent call took meanwhile blocks the call; the
	// values numbered before it keep the pass, which only limits more.
	for i, c := range rules {
		var v *keyedValue
		key := ""
		if i < maxLogged {
			v, key = logged[i], keys[i]
		} else if k, limited := c.key(opts, origin, more.namedOrigins); limited && c.logs {
			v, key = c.values.get(k, nowMs), k
		}
		if v != nil && !c.numberCounted(r, v, key, nowMs, count) {
			held.release(count)
			return heldKeys{}, 0, false, c.blocked
		}
	}
	return held, waitNs, shadowBlocked, nil
}

// numberCounted numbers count passes of key's value v as number does,
// and counts them, or the block, in c's hot sketch unless c only shadows
// (it counted its decision when it checked).
func (c *keyedChecker) numberCounted(r *Resource, v *keyedValue, key string, nowMs, count int64) bool {
	total, numbered := c.number(r, v, nowMs, count)
	if c.hot != nil && !c.shadow {
		draw := passDraw(total, nowMs)
		if !numbered {
			draw = rand.Uint64()
		}
		c.hot.record(nowMs, key, count, !numbered, draw)
	}
	return numbered
}
