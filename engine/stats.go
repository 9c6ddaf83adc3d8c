package engine

import (
	"github.com/sluicehq/sluice/engine/window"
)

// LiveStats is a resource's traffic over the last second.
type LiveStats struct {
	PassQps        float64
	BlockQps       float64
	ShadowBlockQps float64
	CompleteQps    float64
	ErrorQps       float64
	// AvgRtMs is the mean response time of the completed calls, 0 if none.
	AvgRtMs     float64
	Concurrency int64
}

// Live returns the resource's figures over the last second, read in one
// pass over its window.
func (r *Resource) Live() LiveStats {
	sums := r.second.SumAll(r.now())
	perSecond := func(ev window.Event) float64 {
		return float64(sums[ev]) * 1000 / secondIntervalMs
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
	return s
}

// MinuteStat is what happened to one resource in one UTC minute since the
// previous CollectMinutes: counts are deltas to add to what was collected
// before; the extremes are those of the whole minute so far, to merge with
// min and max.
type MinuteStat struct {
	Resource string
	// StartMs is the minute's start in Unix milliseconds.
	StartMs int64
	// Finished is true once the minute is over: later collections bring
	// nothing more for it.
	Finished       bool
	Pass           int64
	Block          int64
	ShadowBlock    int64
	Complete       int64
	Error          int64
	RtSumMs        int64
	MinRtMs        int64 // 0 when no call completed
	MaxRtMs        int64
	MaxConcurrency int64
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
// last collected, taking it out of its minute buckets. The caller holds
// the engine's collectMu.
func (r *Resource) collectMinutes(now int64, out []MinuteStat) []MinuteStat {
	for i := range r.minute.Len() {
		b := r.minute.At(i)
		start := b.StartMs()
		if start < 0 {
			continue
		}
		taken := r.minute.Take(i)
		if taken.StartMs != start || b.StartMs() != start {
			// Reset for a new minute meanwhile: what was taken may be
			// the new minute's, so it goes back to be collected with it.
			for ev, n := range taken.Counts {
				b.Add(window.Event(ev), n)
			}
			continue
		}
		if taken.Counts == ([window.NumEvents]int64{}) {
			continue
		}
		out = append(out, MinuteStat{
			Resource:       r.name,
			StartMs:        start,
			Finished:       start+minuteMs <= now,
			Pass:           taken.Counts[window.Pass],
			Block:          taken.Counts[window.Block],
			ShadowBlock:    taken.Counts[window.ShadowBlock],
			Complete:       taken.Counts[window.Complete],
			Error:          taken.Counts[window.Error],
			RtSumMs:        taken.Counts[window.RtSum],
			MinRtMs:        taken.MinRtMs,
			MaxRtMs:        taken.MaxRtMs,
			MaxConcurrency: taken.MaxConcurrency,
		})
	}
	return out
}
