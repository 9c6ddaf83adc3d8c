// Package impact estimates what a flow or hotspot rule would have blocked
// had it applied over the last day and week, from the minute rows the
// server keeps: each minute's calls, its busiest second and how many
// engines saw them (docs/impact.md says what this can and cannot see).
package impact

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/store"
)

// Ranges are the spans of history an estimate covers, newest last.
var Ranges = []struct {
	Name string
	Dur  time.Duration
}{{"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}}

// MaxMinutes is how many of a range's minutes an estimate names: those
// with the most calls it would have blocked.
const MaxMinutes = 10

// Estimate is what a rule would have blocked over each of Ranges, had it
// applied as it is written. It is an estimate: minute rows keep each
// minute's calls and busiest second, not every second (docs/impact.md).
type Estimate struct {
	Rule     string `json:"rule" example:"orders-qps"`
	Resource string `json:"resource" example:"GET:/api/orders"`
	// Limit is the limit estimated against, in words.
	Limit string `json:"limit" example:"100 calls per 1 s, on each engine"`
	// Ranges has one estimate per span of history, the day then the week.
	Ranges []RangeEstimate `json:"ranges"`
	// Notes say what the estimate could not see for this rule, if
	// anything.
	Notes []string `json:"notes"`
} //@name server.ImpactEstimate

// RangeEstimate is what the rule would have blocked over one span of
// history.
type RangeEstimate struct {
	Range string    `json:"range" example:"24h"`
	From  time.Time `json:"from" format:"date-time"`
	To    time.Time `json:"to" format:"date-time"`
	// MinutesSeen is how many minutes of the range had traffic.
	MinutesSeen int `json:"minutesSeen" example:"1380"`
	// Calls are the calls of those minutes, passed or blocked.
	Calls int64 `json:"calls" example:"4120000"`
	// MinutesBlocked is how many minutes the rule would have blocked
	// calls in (at most: a minute counts if it may have).
	MinutesBlocked int `json:"minutesBlocked" example:"3"`
	// BlockedLow and BlockedHigh bound the calls it would have blocked:
	// at least, and at most.
	BlockedLow  int64 `json:"blockedLow" example:"120"`
	BlockedHigh int64 `json:"blockedHigh" example:"900"`
	// Minutes are the minutes it would have blocked the most in (by
	// BlockedHigh, then time), at most MaxMinutes, oldest first.
	Minutes []MinuteEstimate `json:"minutes"`
} //@name server.ImpactRange

// MinuteEstimate is one minute the rule would have blocked calls in.
type MinuteEstimate struct {
	Time time.Time `json:"time" format:"date-time"`
	// Calls are the minute's calls, passed or blocked.
	Calls int64 `json:"calls" example:"9000"`
	// BusiestSecond is the most calls one engine saw in one second of it.
	BusiestSecond int64 `json:"busiestSecond" example:"240"`
	BlockedLow    int64 `json:"blockedLow" example:"140"`
	BlockedHigh   int64 `json:"blockedHigh" example:"300"`
} //@name server.ImpactMinute

// Source reads the minutes an estimate needs: store.Store does.
type Source interface {
	EngineMinutes(ctx context.Context, name, app string, fromMs, toMs int64) ([]store.EngineMinute, error)
}

// Estimator estimates rules' impact from a Source.
type Estimator struct {
	Source Source
	// NowMs is the clock, in Unix milliseconds.
	NowMs func() int64
}

// Estimable reports whether an estimate can be made for r: a flow or
// hotspot rule.
func Estimable(r *wire.Rule) bool {
	switch r.Spec.(type) {
	case engine.FlowRule, engine.HotspotRule:
		return true
	}
	return false
}

// limit is a rule's limit as the estimate reads it.
type limit struct {
	concurrency bool
	threshold   float64
	intervalMs  int64
	// cluster is true when the threshold holds across every engine.
	cluster bool
}

// Estimate estimates what r, a flow or hotspot rule (Estimable), would
// have blocked over each of Ranges up to now.
func (e *Estimator) Estimate(ctx context.Context, r *wire.Rule) (Estimate, error) {
	est := Estimate{Rule: r.Name, Resource: r.Resource, Ranges: []RangeEstimate{}, Notes: []string{}}
	var l limit
	switch spec := r.Spec.(type) {
	case engine.FlowRule:
		l = limit{spec.Metric == engine.MetricConcurrency, spec.Threshold, spec.StatIntervalMs, spec.Scope == engine.ScopeCluster}
		est.Notes = flowNotes(spec)
	case engine.HotspotRule:
		l = limit{spec.Metric == engine.MetricConcurrency, spec.Threshold, spec.StatIntervalMs, false}
		for _, t := range spec.SpecificItems {
			l.threshold = min(l.threshold, t)
		}
		if spec.Metric != engine.MetricConcurrency {
			l.threshold += float64(spec.BurstCount)
		}
		est.Notes = append(est.Notes, "A hotspot rule limits each value apart, and the history does not keep calls per value: "+
			"the estimate is the most it could have blocked, as if one value (the one with the lowest threshold) made every call; at least 0.")
	default:
		return est, fmt.Errorf("impact: a %s rule is not estimated", r.Kind)
	}
	est.Limit = l.words()
	if r.App != "" {
		est.Notes = append(est.Notes, fmt.Sprintf("Only the traffic of app %s's instances is read: the rule runs on them alone.", r.App))
	}
	now := e.NowMs()
	for _, rg := range Ranges {
		fromMs := now - rg.Dur.Milliseconds()
		minutes, err := e.Source.EngineMinutes(ctx, r.Resource, r.App, fromMs, now)
		if err != nil {
			return est, err
		}
		re := l.over(minutes)
		re.Range, re.From, re.To = rg.Name, time.UnixMilli(fromMs).UTC(), time.UnixMilli(now).UTC()
		est.Ranges = append(est.Ranges, re)
	}
	return est, nil
}

// flowNotes says what the estimate of flow rule r cannot see.
func flowNotes(r engine.FlowRule) []string {
	var notes []string
	if r.ControlBehavior != engine.BehaviorReject {
		notes = append(notes, fmt.Sprintf("The rule's control behavior is %s, estimated as reject: it queues or ramps up where reject blocks, so it blocks no more than this (warm-up may block more while cold).", r.ControlBehavior))
	}
	if r.LimitApp != "" && r.LimitApp != engine.LimitAppDefault {
		notes = append(notes, fmt.Sprintf("The rule limits callers %s only, and the history does not keep calls per caller: estimated against every call, so this is the most it could have blocked.", r.LimitApp))
	}
	if r.RelationStrategy != "" && r.RelationStrategy != engine.RelationCurrent {
		notes = append(notes, fmt.Sprintf("The rule counts the traffic of %s but blocks this resource's calls: estimated against this resource's own traffic, which says little.", r.RefResource))
	}
	return notes
}

// words says l.
func (l limit) words() string {
	per := "on each engine"
	if l.cluster {
		per = "across every engine"
	}
	if l.concurrency {
		return fmt.Sprintf("%g calls in flight, %s", l.threshold, per)
	}
	return fmt.Sprintf("%g calls per %s, %s", l.threshold, time.Duration(l.intervalMs)*time.Millisecond, per)
}

// over estimates the rule's blocks over minutes, oldest first.
func (l limit) over(minutes []store.EngineMinute) RangeEstimate {
	re := RangeEstimate{MinutesSeen: len(minutes), Minutes: []MinuteEstimate{}}
	quota := quotaRun{limit: l}
	for _, m := range minutes {
		re.Calls += m.Calls
		var low, high int64
		switch {
		case l.concurrency:
			// The minute keeps the most calls in flight, not how long
			// they were: over the threshold, a call was blocked at least,
			// and at most every call that came.
			if float64(m.MaxConcurrency) > l.threshold {
				low, high = 1, m.Calls
			}
		case l.intervalMs >= store.MinuteMs:
			low = quota.minute(m)
			high = low
		default:
			low, high = l.minute(m)
		}
		if high == 0 {
			continue
		}
		re.MinutesBlocked++
		re.BlockedLow += low
		re.BlockedHigh += high
		re.Minutes = append(re.Minutes, MinuteEstimate{Time: time.UnixMilli(m.StartMs).UTC(), Calls: m.Calls,
			BusiestSecond: m.BusiestSecond, BlockedLow: low, BlockedHigh: high})
	}
	// The most blocked first to keep MaxMinutes of them, then in time order.
	slices.SortStableFunc(re.Minutes, func(a, b MinuteEstimate) int { return cmp.Compare(b.BlockedHigh, a.BlockedHigh) })
	re.Minutes = re.Minutes[:min(len(re.Minutes), MaxMinutes)]
	slices.SortFunc(re.Minutes, func(a, b MinuteEstimate) int { return a.Time.Compare(b.Time) })
	return re
}

// minute bounds the calls a rule of a window under a minute would have
// blocked in minute m. Per engine and second the rule passes c calls:
//   - low: the busiest second's calls over c (one engine saw them in one
//     second), or the minute's calls over what every engine could pass
//     in a minute, whichever is more;
//   - high: the minute's calls packed into seconds as busy as the busiest,
//     each blocking what it holds over c.
func (l limit) minute(m store.EngineMinute) (low, high int64) {
	c := l.threshold * 1000 / float64(l.intervalMs)
	engines := max(1, m.Engines)
	// The busiest second one engine saw bounds every engine's seconds;
	// across engines (cluster), the fleet's is at most their sum.
	busiest := float64(m.BusiestSecond)
	if l.cluster {
		busiest = min(float64(m.Calls), busiest*float64(engines))
		engines = 1
	}
	if busiest == 0 {
		// A row written before busiest seconds were kept: calls spread
		// over the minute.
		busiest = math.Ceil(float64(m.Calls) / 60)
	}
	calls := float64(m.Calls)
	lowF := max(0, float64(m.BusiestSecond)-c, calls-float64(engines)*60*c)
	if l.intervalMs > 1000 {
		// A window over a second passes threshold calls in any of its
		// seconds; in a minute, a window's worth as often as it fits.
		lowF = max(0, float64(m.BusiestSecond)-l.threshold, calls-float64(engines)*l.threshold*math.Ceil(60_000/float64(l.intervalMs)))
	}
	highF := 0.0
	if busiest > c {
		full := math.Floor(calls / busiest)
		highF = full*(busiest-c) + max(0, calls-full*busiest-c)
	}
	low, high = int64(math.Min(math.Ceil(lowF), calls)), int64(math.Min(math.Ceil(highF), calls))
	return low, max(low, high)
}

// quotaRun estimates a rule whose window is a minute or more minute by
// minute: each minute passes what the window, ending with it, has room
// for after the passes of the minutes before in it.
type quotaRun struct {
	limit
	passed []struct{ startMs, n int64 }
}

// minute returns what the rule would have blocked in m, the minutes in
// time order.
func (q *quotaRun) minute(m store.EngineMinute) int64 {
	windowStart := m.StartMs - q.intervalMs + store.MinuteMs
	kept := q.passed[:0]
	var used int64
	for _, p := range q.passed {
		if p.startMs >= windowStart {
			kept = append(kept, p)
			used += p.n
		}
	}
	q.passed = kept
	room := int64(q.threshold) * max(1, m.Engines)
	if q.cluster {
		room = int64(q.threshold)
	}
	pass := min(m.Calls, max(0, room-used))
	q.passed = append(q.passed, struct{ startMs, n int64 }{m.StartMs, pass})
	return m.Calls - pass
}
