package window

import (
	"math"
	"sync/atomic"
)

const (
	// groupsPerCapacity bounds what a log holds back and what it costs: a
	// log for capacities c and up marks every q-th pass, q = 1 +
	// (c-1)/groupsPerCapacity, so it holds at most q-1 passes (under
	// 1/groupsPerCapacity of c) longer than they need, none up to capacity
	// 100, and keeps at most groupsPerCapacity+2 marks for a single
	// capacity.
	groupsPerCapacity = 100
	// maxMarks bounds the ring of a log for capacities far apart (a warm-up
	// with a large cold factor): it holds back more instead.
	maxMarks = 1024
	// ancientMs is an age past which a pass is out of every window
	// (intervals are minutes at most): marks are forgotten at that age, so
	// the 32 bits they keep are always decoded exactly.
	ancientMs = 1 << 30
	// firstMarks is the ring a log that forgets by time starts with: the
	// marks of a resource with a few calls a second. Seven, with full's 32
	// bits beside them, keep a PassLog at 112 bytes, a size class below
	// 128 (TestPassLogBytes).
	firstMarks = 7
	// forgetMarginMs is how much longer than its window a log keeps a
	// mark: a decision may read the clock before a mark is written and
	// decide after it, and a prioritized call's passes are marked ahead of
	// the clock by their wait (engine.OccupyTimeoutMs, half a second).
	forgetMarginMs = 1000
)

// PassLog is what an exact flow decision reads: when the latest passes of a
// resource happened. The resource numbers its passes 1, 2, 3, … with one
// counter, whose value it gives to Mark and decisions to Admits (the log
// adds to it the passes the counter missed); the log counts them in groups
// of q and keeps, in a ring, each group's mark: the time of its last pass.
//
//	capacity 200: q = 2, a ring of up to 102 marks
//
//	pass   …  97   98 |  99  100 | 101  102 | …
//	group  …     49   |    50    |    51    |
//	mark   …   t(98)  |  t(100)  |  t(102)  |
//
// n more passes leave at most c passes in the window (since, now] iff pass
// total+n-c is at or before since: it and every pass before it are out. A
// group's mark is no earlier than any of its passes, so the log counts each
// pass until the last of its group leaves the window: never too few, at
// most q-1 too many, and none up to capacity 100, where every pass is a
// group. (Buckets of a LeapArray, counted until their last pass leaves,
// would hold a bucket's first pass up to a bucket length too long: under
// paced traffic, a tenth of the threshold and more.)
//
// Marks are written after the passes are counted, behind a fence: nextMark
// is raised once the marks below it are written, and a decision trusts only
// those; a writer marks every group from the fence up to its passes, its
// own and any others not yet marked (recorded no later than it), and marks
// are only ever raised, so a writer running late never lowers a newer
// group's mark. A mark keeps the low 32 bits of a time in milliseconds,
// decoded back from the newest mark's full time; marks that grow ancientMs
// older than a new one are forgotten (floor) before they could be misread.
//
// A log that knows its window (NewPassLogWithin) holds only the marks that
// may still be in it: it starts with a ring of firstMarks, inline, forgets
// a group once its mark is out of every window a decision can read, and
// doubles the ring when a group it must keep would be written over, up to
// the ring its capacities need. So a resource's log costs what its traffic
// needs, not its threshold: a rule of 100 a second on a resource that sees
// a few calls a second keeps 7 marks rather than 102. A growth allocates,
// at most a few times in a log's life, on the call that needs it.
type PassLog struct {
	marker
	perMark int64
	missed  int64 // passes the resource's counter did not count
	// ring holds the marks (marksOf): group g's mark, low 32 bits, is in
	// slot g % its length. next is ring, or the larger ring a writer
	// growing it is copying it into; full is the most marks the log's
	// capacities need.
	ring    atomic.Pointer[markRing]
	next    atomic.Pointer[markRing]
	horizon Horizon
	full    int32 // at most maxMarks + 2
	// firstMarks is the ring the log starts with, nil in ring, when that
	// is enough for it or it forgets by time.
	firstMarks [firstMarks]atomic.Uint32
}

// markRing is a ring of a PassLog's marks.
type markRing struct{ marks []atomic.Uint32 }

// Horizon is what a log needs to know to forget the marks that are out of
// every window its decisions read.
type Horizon struct {
	// IntervalMs is the window the decisions read, ending at their time.
	IntervalMs int64
	// Clock tells how late the times of the passes may be; nil for a clock
	// whose readings are real time.
	Clock Slack
}

// Slack is a clock whose readings lag real time (engine.RealClock): a
// decision holds each pass that much longer.
type Slack interface {
	// SlackMs returns how far behind real time a reading within the last
	// withinMs may have been.
	SlackMs(withinMs int64) int64
}

// marker is what of a log changes as passes are marked.
type marker struct {
	// nextMark is the number of the pass that completes the first group
	// not marked yet: the fence.
	nextMark atomic.Int64
	// newest is the latest time a mark was written, in full; floor is the
	// latest group forgotten: it and every group before it are out of any
	// window.
	newest atomic.Int64
	floor  atomic.Int64
}

// ValueLog is a PassLog for one of many counters of the same capacities
// (a hotspot rule's values), 24 bytes: their owner keeps once the
// group size all share (LogShape) and each one's ring of marks where it
// likes, and gives both to every call. Its passes are numbered from 0,
// none missed.
type ValueLog struct {
	marker
}

// NewPassLog returns a log for decisions on capacities from least to most
// (none when most is 0) of a resource whose counter missed missed passes:
// the log numbers passes as the counter does, plus missed. The passes
// numbered up to passes count as out of the window unless Mark is told when
// they were. It keeps every mark its capacities may need from the start.
func NewPassLog(least, most, passes, missed int64) *PassLog {
	l := &PassLog{}
	l.Init(least, most, passes, missed)
	return l
}

// NewPassLogWithin returns a log as NewPassLog does, for decisions on
// windows of h.IntervalMs at most that end at the time of the call, whose
// ring grows with the traffic it sees.
func NewPassLogWithin(least, most, passes, missed int64, h Horizon) *PassLog {
	l := &PassLog{}
	l.setUp(least, most, passes, missed, h)
	return l
}

// LogShape returns the group size (passes per mark) and the length of
// the ring of marks of a log for capacities least to most > 0, as
// NewPassLog makes them.
func LogShape(least, most int64) (perMark int64, ring int) {
	perMark = max(1+(least-1)/groupsPerCapacity, 1+most/(maxMarks-2))
	// The groups of passes total-most+1 … total, and one more that a
	// writer may be completing.
	return perMark, int(most/perMark + 2)
}

// Init sets up a zero PassLog in place as NewPassLog would, for a log
// embedded in a larger value; the log must not be copied afterwards.
func (l *PassLog) Init(least, most, passes, missed int64) {
	l.setUp(least, most, passes, missed, Horizon{})
}

func (l *PassLog) setUp(least, most, passes, missed int64, h Horizon) {
	l.perMark, l.missed, l.horizon = 1, missed, h
	if most > 0 {
		var ring int
		l.perMark, ring = LogShape(least, most)
		l.full = int32(ring)
		if ring > firstMarks && h.IntervalMs <= 0 {
			full := &markRing{marks: make([]atomic.Uint32, ring)}
			l.ring.Store(full)
			l.next.Store(full)
		}
	}
	l.marker.init(l.perMark, passes)
}

// Init sets up a zero ValueLog of group size perMark (LogShape's) in
// place; the log must not be copied afterwards.
func (l *ValueLog) Init(perMark int64) {
	l.init(perMark, 0)
}

func (l *marker) init(perMark, passes int64) {
	l.newest.Store(never)
	forgotten := passes / perMark
	l.floor.Store(forgotten)
	l.nextMark.Store((forgotten + 1) * perMark)
}

// Mark tells the log that the resource's passes up to its counter's total
// were all recorded by nowMs.
func (l *PassLog) Mark(nowMs, total int64) {
	// Most passes of a log that counts them in groups complete none: the
	// test is written here, where the caller inlines it.
	if total+l.missed >= l.nextMark.Load() {
		l.mark(nowMs, total+l.missed)
	}
}

// mark is Mark for a total, missed passes included, at or past the fence.
func (l *PassLog) mark(nowMs, total int64) {
	fence := l.nextMark.Load()
	if total < fence {
		return
	}
	// The ring after the fence: it holds the marks of the groups below.
	r := l.ring.Load()
	marks := l.marksOf(r)
	if len(marks) == 0 {
		return
	}
	first, last := fence/l.perMark, total/l.perMark // the groups to mark
	// Marks grown ancientMs old are forgotten before they could be
	// misread (written out here, as in ValueLog.Mark: a call would cost
	// every pass).
	newest := l.newest.Load()
	for g := max(l.floor.Load()+1, first-int64(len(marks))+1); g < first; g++ {
		if decode(newest, marks[g%int64(len(marks))].Load()) > nowMs-ancientMs {
			break
		}
		storeMax(&l.floor, g)
	}
	for size := int64(len(marks)); size < int64(l.full) && last-size > l.floor.Load(); size = int64(len(marks)) {
		// The slot of group last holds a group not forgotten yet: the
		// ring holds groups first-size to first-1.
		l.forget(marks, first-size, min(last-size, first-1), nowMs-l.horizon.IntervalMs-l.slackMs()-forgetMarginMs)
		if last-size <= l.floor.Load() {
			break
		}
		r = l.grow(r)
		marks = l.marksOf(r)
	}
	// newest before the marks: a decision that reads a mark then reads a
	// newest at least as late, so it never decodes a mark from after it.
	storeMax(&l.newest, nowMs)
	newest = l.newest.Load()
	writeMarks(marks, first, last, nowMs, newest)
	// A writer growing the ring may have copied it before these marks:
	// they go into its ring too, and into the ring it published.
	if now := l.ring.Load(); now != r {
		r = now
		writeMarks(l.marksOf(r), first, last, nowMs, newest)
	}
	if next := l.next.Load(); next != r {
		writeMarks(l.marksOf(next), first, last, nowMs, newest)
	}
	storeMax(&l.nextMark, (last+1)*l.perMark)
}

// slackMs is how much later than their marks the passes may have been.
func (l *PassLog) slackMs() int64 {
	if l.horizon.Clock == nil {
		return 0
	}
	return l.horizon.Clock.SlackMs(l.horizon.IntervalMs)
}

// grow returns the ring that takes r's place, twice its size (at most
// full): made and published by this writer, or by another that is growing
// it (which it helps finish) or has grown it. The marks of the groups r
// may hold, those after the floor, are copied into it before it is
// published.
func (l *PassLog) grow(r *markRing) *markRing {
	if now := l.ring.Load(); now != r {
		return now
	}
	marks := l.marksOf(r)
	next := l.next.Load()
	if next == r {
		size := min(2*int64(len(marks)), int64(l.full))
		grown := &markRing{marks: make([]atomic.Uint32, size)}
		// Copied before it is shared, the slots of the groups it gets hold
		// their marks rather than zeroes; writes since are copied below.
		copyMarks(grown.marks, marks, l.floor.Load(), l.newest.Load())
		if l.next.CompareAndSwap(r, grown) {
			next = grown
		} else {
			next = l.next.Load()
		}
	}
	copyMarks(l.marksOf(next), marks, l.floor.Load(), l.newest.Load())
	l.ring.CompareAndSwap(r, next)
	return l.ring.Load()
}

// marksOf returns the marks of ring r: firstMarks, as many as the log
// needs up to their number, when r is nil.
func (l *PassLog) marksOf(r *markRing) []atomic.Uint32 {
	if r == nil {
		return l.firstMarks[:min(int(l.full), firstMarks)]
	}
	return r.marks
}

// copyMarks raises the marks in to of the groups that from may hold, the
// len(from) after floor (no writer writes a group further on into it), to
// theirs in from.
func copyMarks(to, from []atomic.Uint32, floor, newest int64) {
	size, toSize := int64(len(from)), int64(len(to))
	for g := floor + 1; g <= floor+size; g++ {
		mark := from[g%size].Load()
		slot := &to[g%toSize]
		for {
			had := slot.Load()
			if had == mark || decode(newest, had) > decode(newest, mark) || slot.CompareAndSwap(had, mark) {
				break
			}
		}
	}
}

// Mark tells the log of group size perMark and ring marks that the passes
// up to total were all recorded by nowMs.
func (l *ValueLog) Mark(perMark int64, marks []atomic.Uint32, nowMs, total int64) {
	fence := l.nextMark.Load()
	if total < fence || len(marks) == 0 {
		return
	}
	first, last := fence/perMark, total/perMark // the groups to mark
	ring := int64(len(marks))
	newest := l.newest.Load()
	for g := max(l.floor.Load()+1, first-ring+1); g < first; g++ {
		if decode(newest, marks[g%ring].Load()) > nowMs-ancientMs {
			break
		}
		storeMax(&l.floor, g)
	}
	storeMax(&l.newest, nowMs)
	writeMarks(marks, first, last, nowMs, l.newest.Load())
	storeMax(&l.nextMark, (last+1)*perMark)
}

// forget raises the floor over the groups after it from from up to upTo,
// all marked, whose marks are at or before cutoffMs, as far as the first
// that is not.
func (l *marker) forget(marks []atomic.Uint32, from, upTo, cutoffMs int64) {
	newest, floor := l.newest.Load(), l.floor.Load()
	g := max(floor+1, from)
	for g <= upTo && decode(newest, marks[g%int64(len(marks))].Load()) <= cutoffMs {
		g++
	}
	if g-1 > floor {
		storeMax(&l.floor, g-1)
	}
}

// writeMarks raises the marks of groups first to last, those the ring
// holds, to nowMs, newest being the newest time marked.
func writeMarks(marks []atomic.Uint32, first, last, nowMs, newest int64) {
	ring := int64(len(marks))
	for g := max(first, last-ring+1); g <= last; g++ {
		slot := &marks[g%ring]
		for {
			mark := slot.Load()
			if decode(newest, mark) >= nowMs || slot.CompareAndSwap(mark, uint32(nowMs)) {
				break
			}
		}
	}
}

// Admits reports whether n more passes leave at most capacity (no more than
// the log's most) of the resource's passes after sinceMs, the resource's
// counter at total.
func (l *PassLog) Admits(total, n, capacity, sinceMs int64) bool {
	atMs, ok := l.freeAt(total + l.missed + n - capacity)
	return ok && atMs <= sinceMs
}

// Slack returns how many passes the log may count too many in a window:
// the passes of a group held until its last one leaves.
func (l *PassLog) Slack() int64 { return l.perMark - 1 }

// decode returns the latest time at or before newestMs whose low 32 bits are
// mark.
func decode(newestMs int64, mark uint32) int64 {
	return newestMs - int64(uint32(newestMs)-mark)
}

// FreeAtMs returns when the pass happened that must leave the window for n
// more passes to leave at most capacity of the resource's passes in it,
// the resource's counter at total: they fit in any window that starts at
// or after it. ok is false when the log cannot tell: that pass is not
// marked yet (it was recorded just now), or n is over capacity.
func (l *PassLog) FreeAtMs(total, n, capacity int64) (atMs int64, ok bool) {
	return l.freeAt(total + l.missed + n - capacity)
}

// FreeAtMs is PassLog.FreeAtMs for the log of group size perMark and
// ring marks, its passes numbered up to total.
func (l *ValueLog) FreeAtMs(perMark int64, marks []atomic.Uint32, total, n, capacity int64) (atMs int64, ok bool) {
	return l.freeAt(perMark, marks, total+n-capacity)
}

// Room returns how many more passes fit under capacity in a window that
// starts after sinceMs, the resource's counter at total: the most n for
// which Admits holds. Not for every call: it searches the log.
func (l *PassLog) Room(total, capacity, sinceMs int64) int64 {
	return room(capacity, func(n int64) bool { return l.Admits(total, n, capacity, sinceMs) })
}

// Room is PassLog.Room for the log of group size perMark and ring marks,
// its passes numbered up to total.
func (l *ValueLog) Room(perMark int64, marks []atomic.Uint32, total, capacity, sinceMs int64) int64 {
	return room(capacity, func(n int64) bool {
		atMs, ok := l.freeAt(perMark, marks, total+n-capacity)
		return ok && atMs <= sinceMs
	})
}

// room returns the most n up to capacity that fits, 0 if none does.
func room(capacity int64, fits func(n int64) bool) int64 {
	lo, hi := int64(0), max(capacity, 0) // fits(lo) or lo is 0; !fits(hi+1)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// Marked is passes of a window, all recorded by AtMs.
type Marked struct{ AtMs, Passes int64 }

// Spans returns the passes the log has marked after sinceMs, in the groups
// it marks them: what a log that takes its place (Seed) must know.
func (l *PassLog) Spans(sinceMs int64) []Marked {
	last := l.nextMark.Load()/l.perMark - 1
	return l.spans(l.perMark, l.marksOf(l.ring.Load()), last, sinceMs)
}

// Spans is PassLog.Spans for the log of group size perMark and ring marks.
func (l *ValueLog) Spans(perMark int64, marks []atomic.Uint32, sinceMs int64) []Marked {
	return l.spans(perMark, marks, l.nextMark.Load()/perMark-1, sinceMs)
}

// spans returns the groups after sinceMs up to last, the last group
// marked, read in marks.
func (l *marker) spans(perMark int64, marks []atomic.Uint32, last, sinceMs int64) []Marked {
	if len(marks) == 0 {
		return nil
	}
	ring := int64(len(marks))
	newest := l.newest.Load()
	var out []Marked
	for g := max(l.floor.Load()+1, last-ring+1, 1); g <= last; g++ {
		if at := decode(newest, marks[g%ring].Load()); at > sinceMs {
			out = append(out, Marked{AtMs: at, Passes: perMark})
		}
	}
	return out
}

// freeAt returns when pass k of the log's numbering happened (see
// FreeAtMs): math.MinInt64 if it is out of every window.
func (l *PassLog) freeAt(k int64) (atMs int64, ok bool) {
	g, atMs, ok, known := l.group(l.perMark, k)
	if known {
		return atMs, ok
	}
	return l.markOf(g), true
}

// markOf returns group g's mark, g below the fence.
func (l *PassLog) markOf(g int64) int64 {
	// The ring after the fence: a group below it is in this ring or a
	// later one.
	marks := l.marksOf(l.ring.Load())
	return decode(l.newest.Load(), marks[g%int64(len(marks))].Load())
}

// freeAt is PassLog.freeAt for the log of group size perMark and ring
// marks.
func (l *marker) freeAt(perMark int64, marks []atomic.Uint32, k int64) (atMs int64, ok bool) {
	g, atMs, ok, known := l.group(perMark, k)
	if known {
		return atMs, ok
	}
	return decode(l.newest.Load(), marks[g%int64(len(marks))].Load()), true
}

// group returns the group of pass k, whose mark tells when it happened,
// or freeAt's answer (known) when no mark needs reading: the pass is out
// of every window, or not marked yet.
func (l *marker) group(perMark, k int64) (g, atMs int64, ok, known bool) {
	if k <= 0 {
		return 0, math.MinInt64, true, true
	}
	g = (k + perMark - 1) / perMark
	switch {
	case g <= l.floor.Load():
		return g, math.MinInt64, true, true
	case g*perMark >= l.nextMark.Load():
		return g, 0, false, true
	}
	return g, 0, false, false
}
