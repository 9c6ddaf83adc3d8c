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
)

// PassLog is what an exact flow decision reads: when the latest passes of a
// resource happened. The resource numbers its passes 1, 2, 3, … with one
// counter, whose value it gives to Mark and decisions to Admits (the log
// adds to it the passes the counter missed); the log counts them in groups
// of q and keeps, in a ring, each group's mark: the time of its last pass.
//
//	capacity 200: q = 2, a ring of 102 marks
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
type PassLog struct {
	marker
	perMark int64
	missed  int64           // passes the resource's counter did not count
	marks   []atomic.Uint32 // marks[g % len(marks)]: group g's mark, low 32 bits
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
// they were.
func NewPassLog(least, most, passes, missed int64) *PassLog {
	l := &PassLog{}
	l.Init(least, most, passes, missed)
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
	l.perMark, l.missed = 1, missed
	if most > 0 {
		var ring int
		l.perMark, ring = LogShape(least, most)
		l.marks = make([]atomic.Uint32, ring)
	}
	l.init(l.perMark, passes)
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
	l.mark(l.perMark, l.marks, nowMs, total+l.missed)
}

// Mark tells the log of group size perMark and ring marks that the passes
// up to total were all recorded by nowMs.
func (l *ValueLog) Mark(perMark int64, marks []atomic.Uint32, nowMs, total int64) {
	l.mark(perMark, marks, nowMs, total)
}

// mark marks the groups of passes up to total, the log's numbering, at
// nowMs.
func (l *marker) mark(perMark int64, marks []atomic.Uint32, nowMs, total int64) {
	fence := l.nextMark.Load()
	if total < fence || len(marks) == 0 {
		return
	}
	ring := int64(len(marks))
	first, last := fence/perMark, total/perMark // the groups to mark
	newest := l.newest.Load()
	for g := max(l.floor.Load()+1, first-ring+1); g < first; g++ {
		if decode(newest, marks[g%ring].Load()) > nowMs-ancientMs {
			break
		}
		storeMax(&l.floor, g)
	}
	// newest before the marks: a decision that reads a mark then reads a
	// newest at least as late, so it never decodes a mark from after it.
	storeMax(&l.newest, nowMs)
	newest = l.newest.Load()
	for g := max(first, last-ring+1); g <= last; g++ {
		slot := &marks[g%ring]
		for {
			mark := slot.Load()
			if decode(newest, mark) >= nowMs || slot.CompareAndSwap(mark, uint32(nowMs)) {
				break
			}
		}
	}
	storeMax(&l.nextMark, (last+1)*perMark)
}

// Admits reports whether n more passes leave at most capacity (no more than
// the log's most) of the resource's passes after sinceMs, the resource's
// counter at total.
func (l *PassLog) Admits(total, n, capacity, sinceMs int64) bool {
	atMs, ok := l.freeAt(l.perMark, l.marks, total+l.missed+n-capacity)
	return ok && atMs <= sinceMs
}

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
	return l.freeAt(l.perMark, l.marks, total+l.missed+n-capacity)
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
	return l.room(l.perMark, l.marks, total+l.missed, capacity, sinceMs)
}

// Room is PassLog.Room for the log of group size perMark and ring marks,
// its passes numbered up to total.
func (l *ValueLog) Room(perMark int64, marks []atomic.Uint32, total, capacity, sinceMs int64) int64 {
	return l.room(perMark, marks, total, capacity, sinceMs)
}

func (l *marker) room(perMark int64, marks []atomic.Uint32, total, capacity, sinceMs int64) int64 {
	fits := func(n int64) bool {
		atMs, ok := l.freeAt(perMark, marks, total+n-capacity)
		return ok && atMs <= sinceMs
	}
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
func (l *PassLog) Spans(sinceMs int64) []Marked { return l.spans(l.perMark, l.marks, sinceMs) }

// Spans is PassLog.Spans for the log of group size perMark and ring marks.
func (l *ValueLog) Spans(perMark int64, marks []atomic.Uint32, sinceMs int64) []Marked {
	return l.spans(perMark, marks, sinceMs)
}

func (l *marker) spans(perMark int64, marks []atomic.Uint32, sinceMs int64) []Marked {
	if len(marks) == 0 {
		return nil
	}
	ring := int64(len(marks))
	last := l.nextMark.Load()/perMark - 1 // the last group marked
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
func (l *marker) freeAt(perMark int64, marks []atomic.Uint32, k int64) (atMs int64, ok bool) {
	if k <= 0 {
		return math.MinInt64, true
	}
	g := (k + perMark - 1) / perMark
	switch {
	case g <= l.floor.Load():
		return math.MinInt64, true
	case g*perMark >= l.nextMark.Load():
		return 0, false
	}
	return decode(l.newest.Load(), marks[g%int64(len(marks))].Load()), true
}
