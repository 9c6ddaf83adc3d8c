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
	// BlockedBy splits the Block of the delta by the rule that blocked:
	// its entries sum to Block (RuleBlocks says what blocked with no rule
	// of the resource's own). A collection may hand out a rule's blocks
	// of a minute whose other counts it had handed out already, in a
	// MinuteStat with zero Counts; summed over a minute's deltas, the
	// entries sum to the minute's Block, but for a call that counted
	// while the minute was collected, which may show under ReasonSystem
	// in one delta and its rule in the next.
	BlockedBy []RuleBlocks
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
	orphaned := e.orphans.take(now, now-retiredGraceMs)
	var out []MinuteStat
	for _, r := range e.resources.all() {
		out = r.collectMinutes(now, orphaned[r], out)
	}
	for _, rr := range e.retired {
		out = rr.res.collectMinutes(now, orphaned[rr.res], out)
	}
	e.dropRetired(now - retiredGraceMs)
	return out
}

// collectMinutes appends to out what the resource recorded since it was
// last collected, with blocks, the blocks its dropped rules counted. The
// rules' tallies are read before the resource's statistics, which count
// each block first (recordBlock). The caller holds the engine's
// collectMu.
func (r *Resource) collectMinutes(now int64, blocks []minuteBlocks, out []MinuteStat) []MinuteStat {
	var buf [2]window.Minute
	rs := r.rules.Load()
	adaptive := rs.adaptive()
	for _, src := range rs.blockSources() {
		blocks = src.tally.drain(now, src.reason, src.rule, blocks)
	}
	first := len(out)
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
	return attachBlocks(out, first, r.name, now, blocks)
}

// attachBlocks adds blocks to the minutes of out[first:], a resource's,
// adding a minute of zero counts for blocks of a minute not there, and
// then to each minute the blocks its rules' tallies do not explain.
func attachBlocks(out []MinuteStat, first int, name string, now int64, blocks []minuteBlocks) []MinuteStat {
	for _, b := range blocks {
		i := first
		for i < len(out) && out[i].StartMs != b.startMs {
			i++
		}
		if i == len(out) {
			out = append(out, MinuteStat{Resource: name, StartMs: b.startMs, Finished: b.startMs+minuteMs <= now})
		}
		out[i].BlockedBy = MergeBlocks(out[i].BlockedBy, []RuleBlocks{b.RuleBlocks})
	}
	for i := first; i < len(out); i++ {
		m := &out[i]
		rest := m.Block
		for _, b := range m.BlockedBy {
			rest -= b.Blocked
		}
		if rest > 0 {
			m.BlockedBy = append(m.BlockedBy, RuleBlocks{Reason: ReasonSystem, Blocked: rest})
		}
	}
	return out
}

// MergeBlocks adds add to list, summing the entries of the same reason and
// rule (a rule changed within a minute is counted in two tallies; deltas
// of a minute add up), and returns it; add is never written to.
func MergeBlocks(list, add []RuleBlocks) []RuleBlocks {
next:
	for _, b := range add {
		for i := range list {
			if list[i].Reason == b.Reason && list[i].Rule == b.Rule {
				list[i].Blocked += b.Blocked
				continue next
			}
		}
		list = append(list, b)
	}
	return list
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
		Concurrency:    r.Concurrency(),
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
