package engine

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Shape of a hotspot rule's hot-values sketch: the last minute in six
// slices of ten seconds, each with hotCounters counters for passes and as
// many for blocks.
const (
	hotSliceMs  = 10_000
	hotSlices   = 6
	hotCounters = 64
	// hotBudget is how many calls a slice records at one sampling rate:
	// past it, the rate halves, so that a busy rule takes the sketch's
	// lock about hotBudget times per slice and rate, whatever its traffic.
	hotBudget   = 1024
	maxHotShift = 32
)

// HotValues is a hotspot rule's hottest values over the last minute:
// ByPass the most passed, most first, and ByBlock the most blocked (or,
// for a shadow rule, that it would have blocked).
type HotValues struct {
	Rule     string
	ParamKey string
	ByPass   []HotValue
	ByBlock  []HotValue
	// Approximate is false when the counts are exact: every call of the
	// minute was counted and no value was forgotten to make room.
	Approximate bool
}

// HotValue is the passes and blocks of one value over the last minute.
// A value ranked by passes that no block sketch holds shows 0 blocks, and
// the other way round.
type HotValue struct {
	Value string
	Pass  int64
	Block int64
}

// hotSketch counts the passes and blocks of a hotspot rule's values over
// the last minute, in bounded memory, to rank the hottest of them.
//
// Each slice of hotSliceMs holds a Space-Saving sketch (Metwally et al.)
// of hotCounters counters for passes and one for blocks: a value not held
// takes the counter of the least counted, inheriting its count. Within a
// slice of N recorded calls, a value's count is over by at most N/k (k
// counters) and every value counted more than N/k is held; over the
// minute, summed across the slices, a value is off by at most the
// minute's N/k. The minute slides by slices: it is the current one and
// the five before, 50 to 60 s.
//
// A call takes the sketch's lock only if it gets it at once (TryLock): a
// call that finds it taken is not counted, and the minute is then marked
// approximate. Past hotBudget calls in a slice, calls are sampled, one in
// 2^shift counted 2^shift times, the rate halving at each further
// budget: a busy rule pays a draw (see passDraw) and two atomic loads per call,
// and the lock a few thousand times per slice. Memory is at most
// 2 × hotSlices × hotCounters counters and their values' copies, whatever
// the number of distinct values; a value is copied when it takes a
// counter, never by a call that finds it held.
type hotSketch struct {
	// shift and sliceEndMs are read by every call: the current slice's
	// sampling (one call in 2^shift) and its end, past which calls go to
	// the lock to start the next slice.
	shift      atomic.Uint32
	sliceEndMs atomic.Int64
	// contendedMs is when a call last found the lock taken.
	contendedMs atomic.Int64
	_           [40]byte // the lock on another cache line than the words above

	mu     sync.Mutex // guards slices
	seed   maphash.Seed
	slices [hotSlices]hotSlice
}

// hotSlice is one slice of the sketch.
type hotSlice struct {
	startMs int64
	// records counts the calls recorded at the current shift.
	records int
	// sampled: some calls of the slice were counted by sampling.
	sampled     bool
	pass, block spaceSaving
}

// spaceSaving is a Space-Saving sketch of hotCounters counters, allocated
// when first used and kept when the slice is reused.
type spaceSaving struct {
	n        int
	counters *[hotCounters]hotCounter
	// evicted: a value took the counter of another.
	evicted bool
}

type hotCounter struct {
	hash  uint64
	value string
	count int64
}

func newHotSketch() *hotSketch {
	s := &hotSketch{seed: maphash.MakeSeed()}
	s.contendedMs.Store(math.MinInt64)
	for i := range s.slices {
		s.slices[i].startMs = math.MinInt64
	}
	return s
}

// record counts count calls of value at nowMs, blocked or passed. draw
// decides whether a sampled call counts: a uniform random number, or as
// good for sampling, passDraw's. The gate, all that most calls of a busy
// rule run, is small enough to inline.
func (s *hotSketch) record(nowMs int64, value string, count int64, blocked bool, draw uint64) {
	// draw>>64 is 0: with shift 0, every call counts.
	if shift := s.shift.Load(); draw>>(64-shift) == 0 || nowMs >= s.sliceEndMs.Load() {
		s.lock(nowMs, value, count, blocked, shift)
	}
}

// passDraw is the draw of the pass that brought a value's pass count to
// total at nowMs: a Weyl sequence of the count, started at a point the
// time moves, in place of a random number. Its top bits are spread
// evenly over a value's consecutive passes, which it then samples one
// in 2^shift almost exactly, and the times scatter values with few
// passes; it costs a multiply where a random number costs a generator's
// round.
func passDraw(total, nowMs int64) uint64 {
	return (uint64(total) + uint64(nowMs)*0xd6e8feb86659fd93) * 0x9e3779b97f4a7c15
}

// lock counts count calls of value at nowMs under the lock, if it is
// free at once: one in 2^shift if the slice of nowMs samples them so.
func (s *hotSketch) lock(nowMs int64, value string, count int64, blocked bool, shift uint32) {
	sampled := shift > 0 && nowMs < s.sliceEndMs.Load()
	if sampled {
		count <<= shift
	}
	if !s.mu.TryLock() {
		if s.contendedMs.Load() < nowMs {
			s.contendedMs.Store(nowMs)
		}
		return
	}
	s.add(nowMs, value, count, blocked, sampled)
	s.mu.Unlock()
}

// add counts weight calls of value in the slice of nowMs, starting it if
// need be. The caller holds s.mu.
func (s *hotSketch) add(nowMs int64, value string, weight int64, blocked, sampled bool) {
	start := nowMs - nowMs%hotSliceMs
	sl := &s.slices[start/hotSliceMs%hotSlices]
	switch {
	case sl.startMs == start:
	case sl.startMs < start:
		sl.startMs, sl.records, sl.sampled = start, 0, false
		sl.pass.reset()
		sl.block.reset()
		if end := start + hotSliceMs; end > s.sliceEndMs.Load() {
			s.shift.Store(0)
			s.sliceEndMs.Store(end)
		}
	default:
		return // a call read the clock before the slice of its reading was reused
	}
	counters := &sl.pass
	if blocked {
		counters = &sl.block
	}
	counters.add(maphash.String(s.seed, value), value, weight)
	sl.sampled = sl.sampled || sampled
	if sl.records++; sl.records >= hotBudget && start+hotSliceMs == s.sliceEndMs.Load() {
		if shift := s.shift.Load(); shift < maxHotShift {
			s.shift.Store(shift + 1)
		}
		sl.records = 0
	}
}

func (c *spaceSaving) reset() {
	c.n, c.evicted = 0, false
}

// add counts weight more of value, hashed h.
func (c *spaceSaving) add(h uint64, value string, weight int64) {
	if c.counters == nil {
		c.counters = new([hotCounters]hotCounter)
	}
	least := 0
	for i := range c.n {
		k := &c.counters[i]
		if k.hash == h && k.value == value {
			k.count += weight
			return
		}
		if k.count < c.counters[least].count {
			least = i
		}
	}
	if c.n < hotCounters {
		c.counters[c.n] = hotCounter{hash: h, value: strings.Clone(value), count: weight}
		c.n++
		return
	}
	k := &c.counters[least]
	*k = hotCounter{hash: h, value: strings.Clone(value), count: k.count + weight}
	c.evicted = true
}

// sumInto adds each value's count to sums.
func (c *spaceSaving) sumInto(sums map[string]int64) {
	for i := range c.n {
		sums[c.counters[i].value] += c.counters[i].count
	}
}

// top returns the n values most passed and the n most blocked in the
// minute up to nowMs, and whether the counts are estimates.
func (s *hotSketch) top(nowMs int64, n int) (byPass, byBlock []HotValue, approximate bool) {
	first := nowMs - nowMs%hotSliceMs - (hotSlices-1)*hotSliceMs
	passes, blocks := map[string]int64{}, map[string]int64{}
	s.mu.Lock()
	for i := range s.slices {
		sl := &s.slices[i]
		if sl.startMs < first || sl.startMs > nowMs {
			continue
		}
		sl.pass.sumInto(passes)
		sl.block.sumInto(blocks)
		approximate = approximate || sl.sampled || sl.pass.evicted || sl.block.evicted
	}
	s.mu.Unlock()
	approximate = approximate || s.contendedMs.Load() >= first
	byPass = rankHot(passes, n, func(value string, count int64) HotValue {
		return HotValue{Value: value, Pass: count, Block: blocks[value]}
	})
	byBlock = rankHot(blocks, n, func(value string, count int64) HotValue {
		return HotValue{Value: value, Pass: passes[value], Block: count}
	})
	return byPass, byBlock, approximate
}

// rankHot returns the n values of counts counted most, most first (ties
// by value), each made by hot.
func rankHot(counts map[string]int64, n int, hot func(value string, count int64) HotValue) []HotValue {
	type ranked struct {
		value string
		count int64
	}
	all := make([]ranked, 0, len(counts))
	for v, c := range counts {
		all = append(all, ranked{v, c})
	}
	slices.SortFunc(all, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.count, a.count), strings.Compare(a.value, b.value))
	})
	n = max(0, min(n, len(all)))
	out := make([]HotValue, 0, n)
	for _, r := range all[:n] {
		out = append(out, hot(r.value, r.count))
	}
	return out
}

// HotValues returns, for each hotspot rule of the resource in force now,
// in load order, its n hottest values by passes and by blocks over the
// last minute (50 to 60 s: see the rule's sketch); none for a nil
// Resource.
func (r *Resource) HotValues(n int) []HotValues {
	if r == nil {
		return nil
	}
	r = r.current()
	now := r.now()
	rs := r.rules.Load()
	if now >= rs.expiresAtMs {
		rs = r.expireRules(now)
	}
	out := make([]HotValues, 0, len(rs.hotspot()))
	for _, c := range rs.hotspot() {
		byPass, byBlock, approximate := c.hot.top(now, n)
		out = append(out, HotValues{Rule: c.rule.Name, ParamKey: c.rule.ParamKey, ByPass: byPass, ByBlock: byBlock, Approximate: approximate})
	}
	return out
}
