package sentinelgo

import (
	"sync"
	"sync/atomic"

	"github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/stat"
	"github.com/alibaba/sentinel-golang/util"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
)

// slotOrder places the Bridge's stat slot after sentinel-golang's own
// (stat.StatSlotOrder), which measures the response time it reads.
const slotOrder = stat.StatSlotOrder + 1000

// minuteMs is the length of a reported minute.
const minuteMs = 60_000

// recorder counts sentinel-golang's entries by resource and minute, as
// engine/remote reports them. It is the remote.Stats of a Bridge.
type recorder struct {
	mu        sync.Mutex
	resources map[string]*resourceCounts
}

// resourceCounts are a resource's calls in flight and what its minutes
// recorded since the last collection.
type resourceCounts struct {
	concurrency int64
	minutes     map[int64]engine.Counts
}

func newRecorder() *recorder { return &recorder{resources: map[string]*resourceCounts{}} }

// event is what a slot callback counts.
type event int

const (
	passed event = iota
	blockedEntry
	completed
)

// record counts ev of ctx's entry in its resource's current minute.
func (r *recorder) record(ctx *base.EntryContext, ev event) {
	nowMs := int64(util.CurrentTimeMillis())
	start := nowMs - nowMs%minuteMs
	name := ctx.Resource.Name()
	n := int64(ctx.Input.BatchCount)
	r.mu.Lock()
	defer r.mu.Unlock()
	rc := r.resources[name]
	if rc == nil {
		rc = &resourceCounts{minutes: map[int64]engine.Counts{}}
		r.resources[name] = rc
	}
	c := rc.minutes[start]
	switch ev {
	case passed:
		c.Pass += n
		rc.concurrency++
		c.MaxConcurrency = max(c.MaxConcurrency, rc.concurrency)
	case blockedEntry:
		c.Block += n
	case completed:
		rt := int64(ctx.Rt())
		if c.Complete == 0 || rt < c.MinRtMs {
			c.MinRtMs = rt
		}
		c.Complete += n
		c.RtSumMs += rt * n
		c.MaxRtMs = max(c.MaxRtMs, rt)
		if ctx.Err() != nil {
			c.Error += n
		}
		// A call that passed under another Bridge was not counted in
		// flight here.
		rc.concurrency = max(rc.concurrency-1, 0)
	}
	rc.minutes[start] = c
}

// NowMs is sentinel-golang's time, which the minutes are counted in.
func (r *recorder) NowMs() int64 { return int64(util.CurrentTimeMillis()) }

// CollectMinutes hands out what was counted since the last call.
func (r *recorder) CollectMinutes() []engine.MinuteStat {
	nowMs := r.NowMs()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []engine.MinuteStat
	for name, rc := range r.resources {
		for start, c := range rc.minutes {
			out = append(out, engine.MinuteStat{Resource: name, StartMs: start, Finished: start+minuteMs <= nowMs, Counts: c})
		}
		clear(rc.minutes)
		if rc.concurrency == 0 {
			delete(r.resources, name)
		}
	}
	return out
}

// Live appends the last second of every resource sentinel-golang counts
// with traffic or calls in flight, from its own statistics.
func (r *recorder) Live(dst []wire.ReportLive) []wire.ReportLive {
	for _, n := range stat.ResourceNodeList() {
		l := wire.LiveStats{PassQps: n.GetQPS(base.MetricEventPass), BlockQps: n.GetQPS(base.MetricEventBlock),
			CompleteQps: n.GetQPS(base.MetricEventComplete), ErrorQps: n.GetQPS(base.MetricEventError),
			AvgRtMs: n.AvgRT(), Concurrency: int64(n.CurrentConcurrency())}
		if l != (wire.LiveStats{}) {
			dst = append(dst, wire.ReportLive{Resource: n.ResourceName(), LiveStats: l})
		}
	}
	return dst
}

// slot is the stat slot registered in sentinel-golang's global slot
// chain. The chain cannot drop a slot, so there is one for the process,
// which counts for the Bridge started last, if it is still running.
type slot struct{ active atomic.Pointer[recorder] }

var (
	theSlot    slot
	registered sync.Once
)

// register adds the slot to sentinel-golang's chain, once.
func register() {
	registered.Do(func() { api.GlobalSlotChain().AddStatSlot(&theSlot) })
}

// Order places the slot after sentinel-golang's own statistics.
func (s *slot) Order() uint32 { return slotOrder }

// OnEntryPassed counts a pass and a call in flight.
func (s *slot) OnEntryPassed(ctx *base.EntryContext) {
	if r := s.active.Load(); r != nil {
		r.record(ctx, passed)
	}
}

// OnEntryBlocked counts a block.
func (s *slot) OnEntryBlocked(ctx *base.EntryContext, _ *base.BlockError) {
	if r := s.active.Load(); r != nil {
		r.record(ctx, blockedEntry)
	}
}

// OnCompleted counts a completion, its response time and its error.
func (s *slot) OnCompleted(ctx *base.EntryContext) {
	if r := s.active.Load(); r != nil {
		r.record(ctx, completed)
	}
}
