package window

import (
	"math"
	"sync/atomic"
)

const (
	// groupsPerCapacity bounds what a log holds back and what it costs: a
	// log for capacities c and up marks every q-th pass, q = 1 +
	// c/groupsPerCapacity, so it holds at most q-1 passes (under
	// 1/groupsPerCapacity of c) longer than they need, none below capacity
	// 100, and keeps about groupsPerCapacity marks for a single capacity.
	groupsPerCapacity = 100
	// maxMarks bounds the ring of a log for capacities far apart (a warm-up
	// with a large cold factor): it holds back more instead.
	maxMarks = 1024
	// ancientMs is an age past which a pass is out of every window
	// (intervals are minutes at most): marks are forgotten at that age, so
	// the 32 bits they keep are always decoded exactly.
	ancientMs = 1 << 30
)

// PassLog is what an exact flow decision reads: how many passes a resource
// has had and, in a ring, when the latest of them happened. Passes are
// numbered 1, 2, 3, … in the order they are recorded and counted in groups
// of q; a group's mark is the time of its last pass:
//
//	capacity 100: q = 2, a ring of 52 marks
//
//	pass   …  97   98 |  99  100 | 101  102 | …
//	group  …     49   |    50    |    51    |
//	mark   …   t(98)  |  t(100)  |  t(102)  |
//
// n more passes leave at most c passes in the window (since, now] iff pass
// total+n-c is at or before since: it and every pass before it are out. A
// group's mark is no earlier than any of its passes, so the log counts each
// pass until the last of its group leaves the window: never too few, at
// most q-1 too many, and none below capacity 100, where every pass is a
// group. (A bucket of a LeapArray counted every pass until the bucket's
// last one left, up to a bucket length late for its first: under paced
// traffic a tenth of the threshold.)
//
// A mark keeps the low 32 bits of a time in milliseconds, decoded back from
// the newest mark's full time; marks that grow ancientMs older than a new
// one are forgotten (floor) before they could be misread.
//
// Record writes the marks of the groups its passes complete before it
// claims the passes with a CAS on the total, so a count is never seen
// without the marks that keep it in the window, and upkeep (floor) reads
// written marks only. A writer whose CAS fails has written marks that
// others are claiming at about the same time: off by no more than two
// racing calls' clock readings.
type PassLog struct {
	total atomic.Int64 // passes recorded
	// nextMark is the number of the next pass to complete a group, or
	// less: Record looks for marks to write only when its passes reach it.
	nextMark atomic.Int64
	// newest is the latest time a mark was written, in full; floor is the
	// latest group forgotten: it and every group before it are out of any
	// window.
	newest  atomic.Int64
	floor   atomic.Int64
	perMark int64
	marks   []atomic.Uint32 // marks[g % len(marks)]: group g's mark, low 32 bits
}

// NewPassLog returns a log for decisions on capacities from least to most;
// one for most 0 only counts passes (Total).
func NewPassLog(least, most int64) *PassLog {
	l := &PassLog{perMark: 1}
	l.newest.Store(never)
	l.nextMark.Store(math.MaxInt64)
	if most > 0 {
		l.perMark = max(1+least/groupsPerCapacity, 1+most/(maxMarks-2))
		// The groups of passes total-most+1 … total, and one more that a
		// batch may be completing.
		l.marks = make([]atomic.Uint32, most/l.perMark+2)
		l.nextMark.Store(l.perMark)
	}
	return l
}

// Total returns the passes recorded.
func (l *PassLog) Total() int64 { return l.total.Load() }

// Record counts n passes at nowMs.
func (l *PassLog) Record(nowMs, n int64) {
	if l.marks == nil {
		l.total.Add(n)
		return
	}
	for {
		old := l.total.Load()
		next := old + n
		marking := next >= l.nextMark.Load()
		if marking {
			l.mark(nowMs, old, next)
		}
		if l.total.CompareAndSwap(old, next) {
			if marking {
				storeMax(&l.nextMark, (next/l.perMark+1)*l.perMark)
			}
			return
		}
	}
}

// mark writes nowMs as the mark of every group that passes old+1 … next
// complete, after forgetting the marks that grew ancient.
func (l *PassLog) mark(nowMs, old, next int64) {
	ring := int64(len(l.marks))
	marked := old / l.perMark
	newest := l.newest.Load()
	for g := max(l.floor.Load()+1, marked-ring+1); g <= marked; g++ {
		if decode(newest, l.marks[g%ring].Load()) > nowMs-ancientMs {
			break
		}
		storeMax(&l.floor, g)
	}
	// newest before the marks: a decision that reads a mark then reads a
	// newest at least as late, so it never decodes a mark from after it.
	storeMax(&l.newest, nowMs)
	last := next / l.perMark
	for g := max(marked+1, last-ring+1); g <= last; g++ {
		l.marks[g%ring].Store(uint32(nowMs))
	}
}

// Admits reports whether n more passes leave at most capacity (no more than
// the log's most) of its passes after sinceMs.
func (l *PassLog) Admits(n, capacity, sinceMs int64) bool {
	total := l.total.Load()
	k := total + n - capacity // it and every pass before it must be out
	if k <= 0 {
		return true
	}
	g := (k + l.perMark - 1) / l.perMark
	if l.marks == nil || g*l.perMark > total { // not marked: n > capacity
		return false
	}
	if g <= l.floor.Load() {
		return true
	}
	mark := l.marks[g%int64(len(l.marks))].Load()
	return decode(l.newest.Load(), mark) <= sinceMs
}

// decode returns the latest time at or before newestMs whose low 32 bits are
// mark.
func decode(newestMs int64, mark uint32) int64 {
	return newestMs - int64(uint32(newestMs)-mark)
}
