package engine

import (
	"github.com/sluicehq/sluice/engine/window"
)

// Calls counts what became of a resource's calls over a span of time.
type Calls struct {
	Pass        int64
	Block       int64
	ShadowBlock int64
	Complete    int64
	Error       int64
}

// Counts is a resource's traffic over a span of time: what the engine
// hands out per minute, a minute or hour row holds, and an answer totals.
// An instance reports it as engine/wire's Counts.
type Counts struct {
	Calls
	RtSumMs int64
	// MinRtMs is the fastest completed call; it means nothing while
	// Complete is 0.
	MinRtMs        int64
	MaxRtMs        int64
	MaxConcurrency int64
	// BusiestSecond is the most calls, passed or blocked, in one second
	// (any ten 100 ms spans in a row, of one engine); a second counts in
	// the minute it ends in.
	BusiestSecond int64
	// AdaptiveLimitMin, AdaptiveLimitMax and AdaptiveLimitLast are the
	// least, greatest and latest limit the resource's adaptive
	// concurrency rule held, learned once per 100 ms span with a
	// completed call; 0 when it had none.
	AdaptiveLimitMin, AdaptiveLimitMax, AdaptiveLimitLast int64
}

// Merge adds o to c the way deltas add up to a minute: counts add, the
// minimum and maxima merge.
func (c *Counts) Merge(o Counts) {
	switch {
	case o.Complete == 0:
	case c.Complete == 0:
		c.MinRtMs = o.MinRtMs
	default:
		c.MinRtMs = min(c.MinRtMs, o.MinRtMs)
	}
	c.Pass += o.Pass
	c.Block += o.Block
	c.ShadowBlock += o.ShadowBlock
	c.Complete += o.Complete
	c.Error += o.Error
	c.RtSumMs += o.RtSumMs
	c.MaxRtMs = max(c.MaxRtMs, o.MaxRtMs)
	c.MaxConcurrency = max(c.MaxConcurrency, o.MaxConcurrency)
	c.BusiestSecond = max(c.BusiestSecond, o.BusiestSecond)
	if o.AdaptiveLimitLast != 0 {
		// o is the later delta: its limit is the latest.
		if c.AdaptiveLimitLast == 0 {
			c.AdaptiveLimitMin = o.AdaptiveLimitMin
		}
		c.AdaptiveLimitMin = min(c.AdaptiveLimitMin, o.AdaptiveLimitMin)
		c.AdaptiveLimitMax = max(c.AdaptiveLimitMax, o.AdaptiveLimitMax)
		c.AdaptiveLimitLast = o.AdaptiveLimitLast
	}
}

// AvgRtMs is the mean response time of the completed calls, 0 if none.
func (c Counts) AvgRtMs() float64 {
	if c.Complete == 0 {
		return 0
	}
	return float64(c.RtSumMs) / float64(c.Complete)
}

// MinuteStat is what happened to one resource in one UTC minute since the
// previous CollectMinutes: counts are deltas to add to what was collected
// before; the extremes are those of the whole minute so far, to merge with
// min and max (Counts.Merge).
type MinuteStat struct {
	Resource string
	// StartMs is the minute's start in Unix milliseconds.
	StartMs int64
	// Finished is true once the minute is over: later collections bring
	// nothing more for it.
	Finished bool
	Counts
}

// CollectMinutes hands out, per resource and minute, what was recorded since
// the previous call: finished minutes in full the first time, the current
// minute as a delta each time. Call it at least once a minute: a finished
// minute is kept for one more. Resources evicted lately (EvictIdle) are
// still collected, so a name may come twice, each part a delta to add.
// Concurrent callers are serialised.
func (e *Engine) CollectMinutes() []MinuteStat {
	e.collectMu.Lock()
	defer e.collectMu.Unlock()
	now := e.clock.NowMs()
	var out []MinuteStat
	for _, r := range e.resources.all() {
		out = r.collectMinutes(now, out)
	}
	for _, rr := range e.retired {
		out = rr.res.collectMinutes(now, out)
	}
	e.dropRetired(now - retiredGraceMs)
	return out
}

// collectMinutes appends to out what the resource recorded since it was
// last collected. The caller holds the engine's collectMu.
func (r *Resource) collectMinutes(now int64, out []MinuteStat) []MinuteStat {
	var buf [2]window.Minute
	adaptive := r.rules.Load().adaptive()
	for _, m := range r.second.Collect(buf[:0]) {
		var least, most, last int64
		if adaptive != nil {
			least, most, last, _ = adaptive.minuteLimit(m.StartMs)
		}
		out = append(out, MinuteStat{
			Resource: r.name,
			StartMs:  m.StartMs,
			Finished: m.StartMs+minuteMs <= now,
			Counts: Counts{
				Calls: Calls{
					Pass:        m.Counts[window.Pass],
					Block:       m.Counts[window.Block],
					ShadowBlock: m.Counts[window.ShadowBlock],
					Complete:    m.Counts[window.Complete],
					Error:       m.Counts[window.Error],
				},
				RtSumMs:        m.Counts[window.RtSum],
				MinRtMs:        m.MinRtMs,
				MaxRtMs:        m.MaxRtMs,
				MaxConcurrency: m.MaxConcurrency,
				BusiestSecond:  m.BusiestSecond,

				AdaptiveLimitMin:  least,
				AdaptiveLimitMax:  most,
				AdaptiveLimitLast: last,
			},
		})
	}
	return out
}

// LiveStats is a resource's traffic over the last second.
type LiveStats struct {
	PassQps        float64
	BlockQps       float64
	ShadowBlockQps float64
	CompleteQps    float64
	ErrorQps       float64
	// AvgRtMs is the mean response time of the completed calls, 0 if none.
	AvgRtMs float64
	// Concurrency is the calls in flight.
	Concurrency int64
	// AdaptiveLimit is the limit of the resource's adaptive concurrency
	// rule now, 0 without one; AdaptiveChange its latest change (AtMs 0
	// before the first).
	AdaptiveLimit  int64
	AdaptiveChange AdaptiveChange
}

// Live returns the resource's figures over the last second, read in one
// pass over its window.
func (r *Resource) Live() LiveStats {
	sums := r.second.SumAll(r.now())
	perSecond := func(ev window.Event) float64 {
		return float64(sums[ev]) * 1000 / float64(r.second.IntervalMs())
	}
	s := LiveStats{
		PassQps:        perSecond(window.Pass),
		BlockQps:       perSecond(window.Block),
		ShadowBlockQps: perSecond(window.ShadowBlock),
		CompleteQps:    perSecond(window.Complete),
		ErrorQps:       perSecond(window.Error),
		Concurrency:    r.concurrency.Load(),
	}
	if s.CompleteQps > 0 {
		s.AvgRtMs = perSecond(window.RtSum) / s.CompleteQps
	}
	if a := r.rules.Load().adaptive(); a != nil {
		st := a.state.Load()
		s.AdaptiveLimit, s.AdaptiveChange = st.limit, st.change
	}
	return s
}
