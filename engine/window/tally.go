package window

import (
	"runtime"
	"sync/atomic"
)

// The shape of a Tally: the last second in spans of 100 ms, and minutes.
const (
	// SpanMs is the length of one span of a Tally's second.
	SpanMs = 100
	// Spans is how many spans a Tally keeps: the last second.
	Spans = 10
	// MinuteMs is the length of a Tally's minute.
	MinuteMs = 60_000
	// minutes is how many minutes a Tally keeps: the current one and the
	// one before, so that a finished minute can be collected for a whole
	// minute after it ends.
	minutes = 2
	// kept is how many events a Tally keeps inline: all but ShadowBlock.
	kept = ShadowBlock
	// narrow is how many of them a span's mark keeps in 32 bits: all but
	// RtSum, whose second may pass 2^32 (a thousand calls of 72 minutes
	// each ending together).
	narrow = RtSum
)

// Tally counts a resource's events as running totals, and marks what the
// totals were as each span of the last second and each of the last two
// minutes began: what happened in a span (or minute) is the difference
// between its mark and the next one's, or the totals for the newest. A
// call adds to the totals, one cache line that it writes and nothing else,
// however many windows read them (shadow blocks, which only rules in
// shadow mode count, are kept apart from the first one on), or once calls
// collided on that line, to its core's line of Stripes, which the totals
// include when read; the second and
// minute windows cost a copy of the totals once per span, made by the call
// that starts it. What a span held is known while its mark is in the ring:
// flow decisions, which must hold a threshold in any real window, read a
// PassLog instead.
//
//	totals       ------------------------------------> T
//	span marks   | m(90) | m(91) | … | m(99) | m(100) |   (100 ms each)
//	minute marks | M(0) ………………………………… | M(1)  ………    (60 s each)
//
//	passes in span 99 = m(100)[Pass] - m(99)[Pass]
//	passes in span 100, the newest so far = T[Pass] - m(100)[Pass]
//
// The writer that finds the newest span over for its time starts the next
// one: it claims newest (resetting), copies the totals into the new span's
// mark (and into the spans it skipped, which saw nothing, and into a new
// minute's mark), then publishes the span's start; other writers yield
// meanwhile (a few dozen stores). Spans start in time order: a call whose
// time is before the newest span (it read the clock just before another
// call started a span, or a manual clock went back) counts in the newest,
// so that nothing counted is lost and no span's count is negative. A
// reader copies the marks and the totals, and again if a span started
// meanwhile.
//
// A Tally must not be copied once used. Its zero value is not ready: call
// Init.
type Tally struct {
	// unpaired, claimed and totals come first: the resource that embeds a
	// Tally puts them on a cache line of their own, the one its calls
	// write. The calls in flight are not counted apart but derived: the
	// passes less the completions, plus unpaired, what the calls that do
	// not leave flight as they complete, or complete without having
	// passed, change that by (InFlight). claimed counts passes that are
	// not in totals[Pass]: the owner's own (see Claimed).
	unpaired atomic.Int64
	claimed  atomic.Int64
	totals   [kept]atomic.Int64
	// shadow counts ShadowBlock, nil until the first is counted: most
	// resources have no rule in shadow mode, and the marks of an event
	// cost a tenth of a Tally.
	shadow atomic.Pointer[shadowTally]
	// stripes count what totals did once two writers collided on them
	// (Stripes), nil until then; claimed stays on the shared line, as the
	// pass logs number passes by it.
	stripes atomic.Pointer[Stripes]
	// newest is the start of the newest span, never before the first, or
	// resetting while a writer starts one.
	newest atomic.Int64
	// marks[k % Spans] is what the totals were as span k (start k ×
	// SpanMs) began, for the Spans spans up to the newest, rtMarks the
	// same of RtSum. A mark keeps the low 32 bits of a total, read back
	// from the totals (wide): exact while a second counts fewer than 2^32
	// of an event, as no process calls that often. Half the bytes help
	// keep a Resource at 512 bytes (see engine.Resource).
	marks   [Spans][narrow]atomic.Uint32
	rtMarks [Spans]atomic.Int64
	// minuteAt is what the totals were as the newest minute began: all
	// Collect needs, as the minute before it is counted from what was
	// collected. minutes[m % minutes] is minute m (start m × MinuteMs) if
	// it began.
	minuteAt [kept]atomic.Int64
	minutes  [minutes]minuteMark
	// collected is what the totals were when Collect last read them (of
	// ShadowBlock, in shadow); only Collect, one call at a time, uses it.
	collected [kept]int64
}

// minuteMark is a minute's start and the extremes of its calls.
type minuteMark struct {
	start atomic.Int64
	x     Extremes
}

// shadowTally is ShadowBlock's total and marks, kept as a Tally's others
// are. Its marks start at zero, the total before the first was counted.
type shadowTally struct {
	total     atomic.Int64
	marks     [Spans]atomic.Uint32
	minuteAt  atomic.Int64
	collected int64
}

// Span is one span of a Tally's second, as At returns it.
type Span struct {
	start  int64
	counts [NumEvents]int64
}

// StartMs returns the start of the span.
func (s Span) StartMs() int64 { return s.start }

// Get returns the count of ev in the span.
func (s Span) Get(ev Event) int64 { return s.counts[ev] }

// Minute is what Collect hands out for one minute: the counts since the
// previous collection and the extremes of the whole minute so far.
type Minute struct {
	StartMs        int64
	Counts         [NumEvents]int64
	MinRtMs        int64 // 0 when no call completed
	MaxRtMs        int64
	MaxConcurrency int64
	// BusiestSecond is the most calls, passed or blocked, in one second
	// of the minute: any ten spans in a row that end in it, the second
	// still under way included.
	BusiestSecond int64
}

// view is a consistent copy of a Tally's marks and totals.
type view struct {
	newest   int64
	totals   [NumEvents]int64
	marks    [Spans][NumEvents]int64
	minuteAt [NumEvents]int64
	minutes  [minutes]struct {
		start int64
		// minRt, maxRt, maxConcurrency and busiestSecond are the
		// minute's extremes.
		minRt, maxRt, maxConcurrency, busiestSecond int64
	}
}

// wide returns the total whose low 32 bits a mark kept, total being the
// event's total now: at most 2^32-1 more.
func wide(total int64, mark uint32) int64 {
	return total - int64(uint32(total)-mark)
}

// Init readies t, which holds nothing yet.
func (t *Tally) Init() {
	t.newest.Store(never)
	for i := range t.minutes {
		t.minutes[i].start.Store(never)
		t.minutes[i].x.reset()
	}
}

// Claimed returns a counter of passes that the owner adds to instead of
// calling Add(Pass) (a resource claims passes on it when its rules number
// them): t counts its passes too, as long as each is added after Open for
// its time, so that the claim falls in the call's span or a later one.
// Numbers claimed in blocks (ClaimBlock) count as passes only once used.
func (t *Tally) Claimed() *atomic.Int64 { return &t.claimed }

// Open starts the span of nowMs if it is not started: call it before
// counting a call of then. It reports whether this call started it.
func (t *Tally) Open(nowMs int64) bool {
	return nowMs >= t.newest.Load()+SpanMs && t.roll(nowMs)
}

// Stripes returns the lines t counts on since writers collided on its
// totals, nil before.
func (t *Tally) Stripes() *Stripes { return t.stripes.Load() }

// stripe returns t's Stripes, made if need be: writers collided.
func (t *Tally) stripe() *Stripes {
	if s := t.stripes.Load(); s != nil {
		return s
	}
	t.stripes.CompareAndSwap(nil, newStripes())
	return t.stripes.Load()
}

// Extremes returns the extremes of the newest minute, for a call of
// nowMs counted after Open. They are found from the newest span rather
// than kept in a pointer, which would take a Resource past 512 bytes;
// while a writer starts a span, the call's own minute's are (a minute's
// slot is reset before a call of it can be counted).
func (t *Tally) Extremes(nowMs int64) *Extremes {
	n := t.newest.Load()
	if n == resetting {
		n = nowMs
	}
	// slotOf(n, MinuteMs, minutes), cheap enough to inline: shifted by
	// whole rings of minutes, n is positive and divides down to its floor.
	return &t.minutes[(n+minuteShiftMs)/MinuteMs%minutes].x
}

// minuteShiftMs is a whole number of rings of minutes that makes any time
// a Tally counts positive.
const minuteShiftMs = minutes * MinuteMs << 40

// roll starts the span of nowMs, unless another writer did: Open's slow
// path.
func (t *Tally) roll(nowMs int64) bool {
	for {
		s := t.newest.Load()
		switch {
		case s == resetting:
			runtime.Gosched()
			continue
		case nowMs < s+SpanMs:
			return false
		case !t.newest.CompareAndSwap(s, resetting):
			continue
		}
		start := floorTo(nowMs, SpanMs)
		at := t.loadTotals()
		if s != never {
			// The second that ended as span s did is the last whose calls
			// are all counted, and the busiest of those ending since: its
			// first span's mark is in the slot about to be written.
			first := &t.marks[slotOf(s+SpanMs, SpanMs, Spans)]
			t.minutes[slotOf(s, MinuteMs, minutes)].x.observeSecond(int64(uint32(at[Pass])-first[Pass].Load()) + int64(uint32(at[Block])-first[Block].Load()))
		}
		// The spans skipped since the newest saw nothing: they begin
		// with the same totals.
		shadow := t.shadow.Load()
		for k := max(s+SpanMs, start-(Spans-1)*SpanMs); k <= start; k += SpanMs {
			i := slotOf(k, SpanMs, Spans)
			for ev := range narrow {
				t.marks[i][ev].Store(uint32(at[ev]))
			}
			t.rtMarks[i].Store(at[RtSum])
			if shadow != nil {
				shadow.marks[i].Store(uint32(at[ShadowBlock]))
			}
		}
		if minute := floorTo(start, MinuteMs); minute > floorTo(s, MinuteMs) {
			i := slotOf(minute, MinuteMs, minutes)
			m := &t.minutes[i]
			m.x.reset()
			for ev := range kept {
				t.minuteAt[ev].Store(at[ev])
			}
			if shadow != nil {
				shadow.minuteAt.Store(at[ShadowBlock])
			}
			m.start.Store(minute)
		}
		t.newest.Store(start)
		return true
	}
}

// Add counts n events of kind ev, after Open. Those a Tally keeps inline
// go on the shared line until a writer finds another changed it between
// its load and its swap, on Stripes from then on.
func (t *Tally) Add(ev Event, n int64) {
	if ev < kept {
		if s := t.stripes.Load(); s != nil {
			s.add(ev, n)
		} else if old := t.totals[ev].Load(); !t.totals[ev].CompareAndSwap(old, old+n) {
			t.stripe().add(ev, n)
		}
		return
	}
	t.addShadow(n)
}

// addShadow counts n shadow blocks.
func (t *Tally) addShadow(n int64) {
	shadow := t.shadow.Load()
	if shadow == nil {
		// Zero marks are right: the total was zero at every mark.
		t.shadow.CompareAndSwap(nil, &shadowTally{})
		shadow = t.shadow.Load()
	}
	shadow.total.Add(n)
}

// AddComplete counts n completed calls that took rtMs each, errors of
// them, after Open, as left calls leave flight (0 for completions
// reported after their calls were released, or of none). The completions
// tell a collision, as Add does; the rare response times and errors then
// follow them without a swap.
func (t *Tally) AddComplete(n, rtMs, errors, left int64) {
	if n != left {
		// Before the completions, which InFlight reads first: a reader
		// that finds them finds this too, and never counts calls left
		// that did not.
		t.unpaired.Add(n - left)
	}
	s := t.stripes.Load()
	if s == nil {
		if old := t.totals[Complete].Load(); t.totals[Complete].CompareAndSwap(old, old+n) {
			if rtMs > 0 {
				t.totals[RtSum].Add(n * rtMs)
			}
			if errors > 0 {
				t.totals[Error].Add(errors)
			}
			return
		}
		s = t.stripe()
	}
	s.add(Complete, n)
	if rtMs > 0 {
		s.add(RtSum, n*rtMs)
	}
	if errors > 0 {
		s.add(Error, errors)
	}
}

// InFlight returns the calls in flight: the passes counted less the
// completions, plus what AddComplete and AddInFlight told apart. Read
// while calls enter and leave, it is never below the calls in flight when
// it reads unpaired (a call that left counts as in flight until its
// completion or AddInFlight), and exact when none does: the completions
// are read first and the passes last, and a writer adds to unpaired before
// the completions that it pairs with and after the passes.
func (t *Tally) InFlight() int64 {
	s := t.stripes.Load()
	done := t.totals[Complete].Load()
	if s != nil {
		done += s.sum(Complete)
	}
	n := t.unpaired.Load()
	if s == nil {
		// passed, written out: the one-goroutine pass reads it.
		return n + t.claimed.Load() + t.totals[Pass].Load() - done
	}
	return n + t.passed(s) - done
}

// ReserveInFlight adds n calls to those in flight before they pass, and
// returns the calls in flight with them, no fewer than there are: two
// calls that reserve at once count each other, as an atomic add's do, so
// that a limit on calls in flight holds. Once the call's passes are
// counted, or if it does not pass, AddInFlight(-n) takes the reservation
// back.
func (t *Tally) ReserveInFlight(n int64) int64 {
	s := t.stripes.Load()
	done := t.totals[Complete].Load()
	if s != nil {
		done += s.sum(Complete)
	}
	// A pass that moves from the reservation to the passes after this add
	// read the reservation, and one that moved before it is in the passes
	// read after it.
	reserved := t.unpaired.Add(n)
	return reserved + t.passed(s) - done
}

// AddInFlight adds n to the calls in flight that are neither passes nor
// completions: negative for calls that leave flight without completing
// (released, their outcome reported later), or passes that never enter it
// or entered it reserved (ReserveInFlight). A negative n is added after
// the passes it takes out of flight are counted, so that InFlight, which
// reads unpaired first, never finds it without them.
func (t *Tally) AddInFlight(n int64) { t.unpaired.Add(n) }

// passed returns the passes counted, claimed and on stripes s included:
// the numbers claimed but for those the blocks of s hold unused or gave
// up (Stripes.unused), read after the claimed count.
func (t *Tally) passed(s *Stripes) int64 {
	for {
		claimed := t.claimed.Load()
		n := claimed + t.totals[Pass].Load()
		if s == nil {
			return n
		}
		if unused, ok := s.unused(claimed); ok {
			return n - unused + s.sum(Pass)
		}
	}
}

// loadTotals returns the totals, the passes claimed (less the numbers of
// blocks unused, as passed counts them) and shadow blocks included.
func (t *Tally) loadTotals() [NumEvents]int64 {
	var totals [NumEvents]int64
	for {
		for ev := range kept {
			totals[ev] = t.totals[ev].Load()
		}
		claimed := t.claimed.Load()
		totals[Pass] += claimed
		s := t.stripes.Load()
		if s == nil {
			break
		}
		if unused, ok := s.unused(claimed); ok {
			totals[Pass] -= unused
			s.addTo(&totals)
			break
		}
	}
	if shadow := t.shadow.Load(); shadow != nil {
		totals[ShadowBlock] = shadow.total.Load()
	}
	return totals
}

// load copies the marks, the minutes and the totals, consistently: again
// if a span started meanwhile.
func (t *Tally) load(v *view) {
	for {
		n := t.newest.Load()
		if n == resetting {
			runtime.Gosched()
			continue
		}
		shadow := t.shadow.Load()
		var marks [Spans][NumEvents]uint32
		for k := range marks {
			for ev := range narrow {
				marks[k][ev] = t.marks[k][ev].Load()
			}
			v.marks[k][RtSum] = t.rtMarks[k].Load()
			if shadow != nil {
				marks[k][ShadowBlock] = shadow.marks[k].Load()
			}
		}
		for ev := range kept {
			v.minuteAt[ev] = t.minuteAt[ev].Load()
		}
		v.minuteAt[ShadowBlock] = 0
		if shadow != nil {
			v.minuteAt[ShadowBlock] = shadow.minuteAt.Load()
		}
		for i := range v.minutes {
			m, c := &t.minutes[i], &v.minutes[i]
			c.start = m.start.Load()
			c.minRt, c.maxRt, c.maxConcurrency = m.x.minRtMs(), int64(m.x.maxRt.Load()), int64(m.x.maxConcurrency.Load())
			c.busiestSecond = int64(m.x.busiestSecond.Load())
		}
		// The totals after the marks: no mark is past them.
		v.totals = t.loadTotals()
		if t.newest.Load() == n {
			v.newest = n
			for k := range marks {
				for ev := range narrow {
					v.marks[k][ev] = wide(v.totals[ev], marks[k][ev])
				}
				v.marks[k][ShadowBlock] = wide(v.totals[ShadowBlock], marks[k][ShadowBlock])
			}
			return
		}
	}
}

// mark returns what the totals were as span k began, k at most one past
// the newest span and in the ring: the totals themselves past the newest.
func (v *view) mark(k int64) *[NumEvents]int64 {
	if k > v.newest/SpanMs {
		return &v.totals
	}
	return &v.marks[slotOf(k*SpanMs, SpanMs, Spans)]
}

// sum returns the counts of the spans from first to last, those kept.
func (v *view) sum(first, last int64) [NumEvents]int64 {
	var sums [NumEvents]int64
	if v.newest == never {
		return sums
	}
	newest := floorTo(v.newest, SpanMs) / SpanMs
	first, last = max(first, newest-Spans+1), min(last, newest)
	if first > last {
		return sums
	}
	from, to := v.mark(first), v.mark(last+1)
	for ev := range sums {
		sums[ev] = to[ev] - from[ev]
	}
	return sums
}

// IntervalMs returns the length of the second the spans cover.
func (t *Tally) IntervalMs() int64 { return Spans * SpanMs }

// BucketLenMs returns the length of one span.
func (t *Tally) BucketLenMs() int64 { return SpanMs }

// Len returns the number of spans kept.
func (t *Tally) Len() int { return Spans }

// At returns the span in slot i, 0 <= i < Len: the latest span up to the
// newest that it holds. A span before the first holds nothing.
func (t *Tally) At(i int) Span {
	var v view
	t.load(&v)
	newest := floorTo(v.newest, SpanMs) / SpanMs
	k := newest - (newest-int64(i))%Spans
	if (newest-int64(i))%Spans < 0 {
		k -= Spans
	}
	return Span{start: k * SpanMs, counts: v.sum(k, k)}
}

// SumAll returns the count of every event over the spans that start in
// (nowMs-interval, nowMs]: the last second, the current span included.
func (t *Tally) SumAll(nowMs int64) [NumEvents]int64 {
	var v view
	t.load(&v)
	return v.sum(floorTo(nowMs-Spans*SpanMs, SpanMs)/SpanMs+1, floorTo(nowMs, SpanMs)/SpanMs)
}

// NewestMinuteMs returns the start of the newest minute with a call
// counted, and false if none was.
func (t *Tally) NewestMinuteMs() (int64, bool) {
	for {
		switch n := t.newest.Load(); n {
		case resetting:
			runtime.Gosched()
		case never:
			return 0, false
		default:
			return floorTo(n, MinuteMs), true
		}
	}
}

// Collect appends to out what the totals counted since the previous call,
// per minute kept: the older minute has everything before the newest
// minute began, the newest what came after. Minutes with nothing counted
// since are left out. Only one Collect may run at a time.
func (t *Tally) Collect(out []Minute) []Minute {
	var v view
	t.load(&v)
	if v.newest == never {
		return out
	}
	newestMinute := floorTo(v.newest, MinuteMs)
	cur := slotOf(newestMinute, MinuteMs, minutes)
	older := (cur + 1) % minutes
	var collected [NumEvents]int64
	copy(collected[:], t.collected[:])
	shadow := t.shadow.Load()
	if shadow != nil {
		collected[ShadowBlock] = shadow.collected
	}
	if s := v.minutes[older].start; s != never && s < newestMinute {
		out = appendMinute(out, &v, older, &collected, &collected, &v.minuteAt)
	}
	out = appendMinute(out, &v, cur, &collected, &v.minuteAt, &v.totals)
	copy(t.collected[:], v.totals[:kept])
	if shadow != nil {
		// A shadow counted since v was loaded has nothing collected.
		shadow.collected = v.totals[ShadowBlock]
	}
	return out
}

// appendMinute appends the minute of v's slot i with the counts from what
// was collected (or from, if later) up to to.
func appendMinute(out []Minute, v *view, i int, collected, from, to *[NumEvents]int64) []Minute {
	var m Minute
	counted := false
	for ev := range m.Counts {
		if d := to[ev] - max(from[ev], collected[ev]); d > 0 {
			m.Counts[ev], counted = d, true
		}
	}
	if !counted {
		return out
	}
	c := &v.minutes[i]
	m.StartMs, m.MaxRtMs, m.MaxConcurrency, m.BusiestSecond = c.start, c.maxRt, c.maxConcurrency, c.busiestSecond
	if c.start == floorTo(v.newest, MinuteMs) {
		// The second under way, which the next span's start would count.
		first := v.mark(v.newest/SpanMs - Spans + 1)
		m.BusiestSecond = max(m.BusiestSecond, v.totals[Pass]+v.totals[Block]-first[Pass]-first[Block])
	}
	if c.minRt != noRt {
		m.MinRtMs = c.minRt
	}
	return append(out, m)
}

// floorTo rounds ms down to a multiple of unit.
func floorTo(ms, unit int64) int64 {
	r := ms % unit
	if r < 0 {
		r += unit
	}
	return ms - r
}

// slotOf returns the slot, in a ring of n, of the span of unit that holds
// ms.
func slotOf(ms, unit int64, n int) int {
	k := floorTo(ms, unit) / unit % int64(n)
	if k < 0 {
		k += int64(n)
	}
	return int(k)
}

// SumSpans returns the count of every event over the kept spans that
// start in [fromMs, toMs): what an adaptive limit learns from, once per
// span, without counting anything of its own.
func (t *Tally) SumSpans(fromMs, toMs int64) [NumEvents]int64 {
	var v view
	t.load(&v)
	return v.sum(floorTo(fromMs+SpanMs-1, SpanMs)/SpanMs, floorTo(toMs-1, SpanMs)/SpanMs)
}
