package metrics

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/sluicehq/sluice/engine"
)

// The backlog is the last BacklogSeconds of per-second figures of every
// resource active in that time, so that a live chart opened or reloaded
// draws five minutes at once instead of filling up as it watches. It is
// sampled once a second, whether anyone listens or not.
//
// Its memory is fixed: a resource costs one ring of BacklogSeconds samples
// of 20 bytes, about 6 KB, from its first active second until it has been
// idle for the whole window; at most BacklogResources are held (about
// 60 MB), and a resource that comes when the backlog is full waits for a
// ring to be freed (TestBacklogMemory measures it).

const (
	// BacklogSeconds is how far back the backlog reaches: five minutes.
	BacklogSeconds = 300
	// BacklogResources is the most resources the backlog holds at once.
	BacklogResources = 10_000
)

// backlogSample is one second of one resource, kept small: counts a
// second fit in 32 bits, and a mean response time needs no more than a
// float32's precision.
type backlogSample struct {
	pass, block, shadowBlock, concurrency uint32
	// avgRtMs is NaN when no call completed in the second.
	avgRtMs float32
}

// idleSample is a second without traffic.
var idleSample = backlogSample{avgRtMs: float32(math.NaN())}

// backlogRing is one resource's samples, slot second%BacklogSeconds; the
// slots of seconds after lastSec are idle seconds, not yet zeroed.
type backlogRing struct {
	samples [BacklogSeconds]backlogSample
	lastSec int64
}

// Backlog keeps the last BacklogSeconds of per-second figures; it is safe
// for concurrent use.
type Backlog struct {
	maxResources int

	mu    sync.Mutex
	rings map[string]*backlogRing
	// sampled holds, slot by slot, the second last sampled there: a
	// second the sampler missed (the server was down or stalled) is a
	// gap, not an idle second.
	sampled [BacklogSeconds]int64
	lastSec int64
}

// NewBacklog returns an empty backlog that holds at most maxResources.
func NewBacklog(maxResources int) *Backlog {
	b := &Backlog{maxResources: maxResources, rings: map[string]*backlogRing{}, lastSec: math.MinInt64}
	for i := range b.sampled {
		b.sampled[i] = math.MinInt64
	}
	return b
}

// Record samples second sec: read calls add with the figures of every
// resource active in it. A second already sampled is not sampled again.
func (b *Backlog) Record(sec int64, read func(add func(name string, live engine.LiveStats))) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if sec <= b.lastSec {
		return
	}
	b.lastSec = sec
	b.sampled[slot(sec)] = sec
	read(func(name string, l engine.LiveStats) {
		ring := b.rings[name]
		if ring == nil {
			if len(b.rings) >= b.maxResources {
				return
			}
			ring = &backlogRing{lastSec: sec - BacklogSeconds}
			b.rings[name] = ring
		}
		for s := max(ring.lastSec+1, sec-BacklogSeconds+1); s < sec; s++ {
			ring.samples[slot(s)] = idleSample
		}
		rt := float32(math.NaN())
		if l.CompleteQps > 0 {
			rt = float32(l.AvgRtMs)
		}
		ring.samples[slot(sec)] = backlogSample{
			pass: count(l.PassQps), block: count(l.BlockQps), shadowBlock: count(l.ShadowBlockQps),
			concurrency: count(float64(l.Concurrency)), avgRtMs: rt,
		}
		ring.lastSec = sec
	})
	for name, ring := range b.rings {
		if ring.lastSec <= sec-BacklogSeconds {
			delete(b.rings, name) // idle for the whole window
		}
	}
}

func slot(sec int64) int { return int(((sec % BacklogSeconds) + BacklogSeconds) % BacklogSeconds) }

// count is a per-second figure as the sample keeps it.
func count(f float64) uint32 { return uint32(min(max(math.Round(f), 0), math.MaxUint32)) }

// LiveBacklog is the backlog as read: Seconds seconds from FromSec, each
// series one value a second.
type LiveBacklog struct {
	FromSec   int64
	Seconds   int
	Resources []ResourceBacklog
}

// ResourceBacklog is one resource's seconds. Sampled[i] is false for a
// second the server did not sample: a gap, whose figures mean nothing.
// HasRt[i] is false for a second in which no call completed.
type ResourceBacklog struct {
	Name                                  string
	Sampled, HasRt                        []bool
	Pass, Block, ShadowBlock, Concurrency []uint32
	AvgRtMs                               []float32
}

// activity ranks resources for Read's limit.
func (r *ResourceBacklog) activity() uint64 {
	var sum uint64
	for i := range r.Pass {
		sum += uint64(r.Pass[i]) + uint64(r.Block[i]) + uint64(r.ShadowBlock[i]) + uint64(r.Concurrency[i])
	}
	return sum
}

// Read returns the backlog of resource, or with resource "" that of the
// limit busiest resources (calls over the window), by name.
func (b *Backlog) Read(resource string, limit int) LiveBacklog {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lastSec == math.MinInt64 {
		return LiveBacklog{}
	}
	from := b.lastSec - BacklogSeconds + 1
	out := LiveBacklog{FromSec: from, Seconds: BacklogSeconds}
	for name, ring := range b.rings {
		if resource != "" && name != resource {
			continue
		}
		out.Resources = append(out.Resources, b.readRing(name, ring, from))
	}
	if resource == "" && len(out.Resources) > limit {
		slices.SortFunc(out.Resources, func(x, y ResourceBacklog) int { return cmp.Compare(y.activity(), x.activity()) })
		out.Resources = out.Resources[:limit]
	}
	slices.SortFunc(out.Resources, func(x, y ResourceBacklog) int { return cmp.Compare(x.Name, y.Name) })
	return out
}

// readRing is one ring's seconds from from to the last sampled. The
// caller holds mu.
func (b *Backlog) readRing(name string, ring *backlogRing, from int64) ResourceBacklog {
	r := ResourceBacklog{
		Name: name, Sampled: make([]bool, BacklogSeconds), HasRt: make([]bool, BacklogSeconds),
		Pass: make([]uint32, BacklogSeconds), Block: make([]uint32, BacklogSeconds),
		ShadowBlock: make([]uint32, BacklogSeconds), Concurrency: make([]uint32, BacklogSeconds),
		AvgRtMs: make([]float32, BacklogSeconds),
	}
	for i := range BacklogSeconds {
		sec := from + int64(i)
		r.Sampled[i] = b.sampled[slot(sec)] == sec
		if !r.Sampled[i] || sec > ring.lastSec {
			continue
		}
		s := ring.samples[slot(sec)]
		r.Pass[i], r.Block[i], r.ShadowBlock[i], r.Concurrency[i] = s.pass, s.block, s.shadowBlock, s.concurrency
		if !math.IsNaN(float64(s.avgRtMs)) {
			r.HasRt[i], r.AvgRtMs[i] = true, s.avgRtMs
		}
	}
	return r
}

// SampleLive records the current second's figures in the backlog.
func (p *Pipeline) SampleLive() {
	p.backlog.Record(p.NowMs()/1000, p.eachLive)
}

// Backlog is the pipeline's backlog of per-second figures.
func (p *Pipeline) Backlog() *Backlog { return p.backlog }

// RecentSeconds is the span of the overview's ranking and summary: a
// minute smooths out single seconds and still follows an incident.
const RecentSeconds = 60

// Recent is a resource's calls summed over the last RecentSeconds seconds
// the backlog sampled.
type Recent struct {
	Pass, Block, ShadowBlock uint64
}

// BlockedShare is the share of the calls that were blocked, 0 without
// calls.
func (r Recent) BlockedShare() float64 {
	if calls := r.Pass + r.Block; calls > 0 {
		return float64(r.Block) / float64(calls)
	}
	return 0
}

// Recent sums the last RecentSeconds seconds of the resources named, or of
// every resource the backlog holds when names is nil; a resource without
// calls in that time is absent.
func (b *Backlog) Recent(names []string) map[string]Recent {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]Recent{}
	if b.lastSec == math.MinInt64 {
		return out
	}
	add := func(name string, ring *backlogRing) {
		var r Recent
		for sec := max(b.lastSec-RecentSeconds+1, ring.lastSec-BacklogSeconds+1); sec <= ring.lastSec; sec++ {
			if b.sampled[slot(sec)] != sec {
				continue
			}
			s := ring.samples[slot(sec)]
			r.Pass += uint64(s.pass)
			r.Block += uint64(s.block)
			r.ShadowBlock += uint64(s.shadowBlock)
		}
		if r != (Recent{}) {
			out[name] = r
		}
	}
	if names == nil {
		for name, ring := range b.rings {
			add(name, ring)
		}
		return out
	}
	for _, name := range names {
		if ring := b.rings[name]; ring != nil {
			add(name, ring)
		}
	}
	return out
}
