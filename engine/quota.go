package engine

import (
	"cmp"
	"slices"

	"github.com/sluicehq/sluice/engine/window"
)

// QuotaMinIntervalMs is the shortest window of a quota: a qps reject rule
// (flow, or hotspot per value) whose window is a minute or longer keeps
// the passes in it when it is loaded again with other fields, and across
// a restart of its process through QuotaWindows and RestoreQuotaWindows
// (docs/engine.md#hour-and-day-quotas). Shorter windows start again from
// the resource's last second.
const QuotaMinIntervalMs = 60_000

// Bounds of what QuotaWindows returns: spans per window (neighbours are
// merged past it, each counted until the later one's time, which only
// holds passes longer) and values per hotspot rule (the busiest first).
const (
	maxQuotaSpans  = 64
	maxQuotaValues = 10_000
)

// QuotaWindow is the passes the window of one quota rule holds, for a
// value of a hotspot rule: what a restart must not forget.
type QuotaWindow struct {
	Resource string
	Rule     string
	// Value is the hotspot rule's value; "" for a flow rule.
	Value string
	// Spans are the passes in the window, each recorded by its AtMs.
	Spans []window.Marked
}

// QuotaWindows returns the windows of the loaded quota rules with passes
// in them: local flow rules, and the busiest values of hotspot rules,
// that count a window of QuotaMinIntervalMs or more. Cluster rules are
// kept by the shared count.
func (e *Engine) QuotaWindows() []QuotaWindow {
	nowMs := e.clock.NowMs()
	var out []QuotaWindow
	for _, r := range e.resourcesWithRules() {
		rs := r.rules.Load()
		flow := rs.flow
		if rs.more != nil {
			flow = rs.more.flowAll
		}
		for _, c := range flow {
			if c.quota() {
				spans := c.passes.Spans(nowMs - c.intervalMs)
				if len(spans) > 0 {
					out = append(out, QuotaWindow{Resource: r.name, Rule: c.ruleName(), Spans: mergeSpans(spans)})
				}
			}
		}
		if rs.more == nil {
			continue
		}
		for _, c := range rs.more.hotspot {
			if c.quota() {
				out = append(out, c.quotaWindows(r.name, nowMs)...)
			}
		}
	}
	return out
}

// resourcesWithRules returns the resources the rule book holds: those
// with rules, rather than every resource the engine tracks (a server's
// quota keeper asks every few seconds).
func (e *Engine) resourcesWithRules() []*Resource {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	out := make([]*Resource, 0, len(e.book.entries))
	for r := range e.book.entries {
		out = append(out, r)
	}
	return out
}

// RestoreQuotaWindows gives the rules loaded from now on the passes of ws,
// saved by QuotaWindows before a restart: a rule of the same resource and
// name that counts a quota's window starts with the passes still in it.
// Each is used once; call it before loading the rules.
func (e *Engine) RestoreQuotaWindows(ws []QuotaWindow) {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	if e.restored == nil {
		e.restored = make(map[quotaKey][]QuotaWindow)
	}
	for _, w := range ws {
		k := quotaKey{w.Resource, w.Rule}
		e.restored[k] = append(e.restored[k], w)
	}
}

// pruneRestored forgets the restored windows that no rule took and that
// hold no pass a window could still count at nowMs: no rule claims them
// after that, so they would stay in memory until the process ends. The
// caller holds loadMu.
func (e *Engine) pruneRestored(nowMs int64) {
	for k, ws := range e.restored {
		ws = slices.DeleteFunc(ws, func(w QuotaWindow) bool {
			return !slices.ContainsFunc(w.Spans, func(m window.Marked) bool { return m.AtMs > nowMs-MaxStatIntervalMs })
		})
		if len(ws) == 0 {
			delete(e.restored, k)
		} else {
			e.restored[k] = ws
		}
	}
}

// quotaKey finds the restored windows of a rule.
type quotaKey struct{ resource, rule string }

// takeRestored returns and forgets the restored windows of the rule name
// of resource. The caller holds loadMu.
func (e *Engine) takeRestored(resource, name string) []QuotaWindow {
	if len(e.restored) == 0 || name == "" {
		return nil
	}
	k := quotaKey{resource, name}
	ws := e.restored[k]
	delete(e.restored, k)
	return ws
}

// quota reports whether c counts a quota's window on a log of its own.
func (c *flowChecker) quota() bool {
	return c.passes != nil && c.cluster() == nil && c.throttle() == nil && c.warmUp() == nil &&
		c.intervalMs >= QuotaMinIntervalMs
}

// quota reports whether c's values count a quota's window.
func (c *keyedChecker) quota() bool {
	return c.logs && c.source == keyParam && c.rule.StatIntervalMs >= QuotaMinIntervalMs
}

// quotaWindows returns the windows of c's busiest values with passes in
// them at nowMs.
func (c *keyedChecker) quotaWindows(resource string, nowMs int64) []QuotaWindow {
	var out []QuotaWindow
	var passes []int64
	c.values.each(func(v *keyedValue) {
		spans := v.log.Spans(c.perMark[v.item], v.ring(), nowMs-c.rule.StatIntervalMs)
		if len(spans) == 0 {
			return
		}
		out = append(out, QuotaWindow{Resource: resource, Rule: c.rule.Name, Value: v.key(), Spans: mergeSpans(spans)})
		passes = append(passes, sumSpans(spans))
	})
	if len(out) <= maxQuotaValues {
		return out
	}
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(passes[b], passes[a]) })
	busiest := make([]QuotaWindow, maxQuotaValues)
	for i := range busiest {
		busiest[i] = out[order[i]]
	}
	return busiest
}

// seed gives c's values the passes of ws still in c's window at nowMs,
// and those of the values of prior, the checker c replaces.
func (c *keyedChecker) seed(ws []QuotaWindow, prior *keyedChecker, nowMs int64) {
	sinceMs := nowMs - c.rule.StatIntervalMs
	add := func(value string, spans []window.Marked) {
		v := c.values.get(value, nowMs)
		if v == c.values.overflow {
			return
		}
		marks, perMark := v.ring(), c.perMark[v.item]
		total := v.state.Load()
		for _, s := range sortedSpans(spans, sinceMs) {
			total += s.Passes
			v.log.Mark(perMark, marks, s.AtMs, total)
		}
		v.state.Store(total)
	}
	for _, w := range ws {
		add(w.Value, w.Spans)
	}
	if prior != nil && prior.quota() {
		prior.values.each(func(v *keyedValue) {
			if spans := v.log.Spans(prior.perMark[v.item], v.ring(), sinceMs); len(spans) > 0 {
				add(v.key(), spans)
			}
		})
	}
}

// sortedSpans returns the spans of spans after sinceMs, oldest first.
func sortedSpans(spans []window.Marked, sinceMs int64) []window.Marked {
	out := slices.DeleteFunc(slices.Clone(spans), func(s window.Marked) bool { return s.AtMs <= sinceMs || s.Passes <= 0 })
	slices.SortFunc(out, func(a, b window.Marked) int { return cmp.Compare(a.AtMs, b.AtMs) })
	return out
}

// mergeSpans bounds spans, oldest first, to maxQuotaSpans by merging
// neighbours into the later one.
func mergeSpans(spans []window.Marked) []window.Marked {
	spans = sortedSpans(spans, -1<<62)
	for len(spans) > maxQuotaSpans {
		merged := spans[:0]
		for i := 0; i < len(spans); i += 2 {
			s := spans[i]
			if i+1 < len(spans) {
				s = window.Marked{AtMs: spans[i+1].AtMs, Passes: s.Passes + spans[i+1].Passes}
			}
			merged = append(merged, s)
		}
		spans = merged
	}
	return spans
}

func sumSpans(spans []window.Marked) int64 {
	var n int64
	for _, s := range spans {
		n += s.Passes
	}
	return n
}
