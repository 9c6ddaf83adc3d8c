package window

import (
	"math/bits"
	"runtime"
	"sync/atomic"
)

// Stripes are a contended Tally's counts split in lines, one per core or
// so, summed when read: Java's LongAdder cells. A Tally counts on its one
// shared line until two writers collide on it (a compare-and-swap fails),
// and only then gets Stripes, once: a resource that is never contended
// costs no more than before.
//
// A call picks its line by the goroutine it runs on, hashed from the
// address of its stack, so that a goroutine keeps writing the same line
// while it runs: a line picked at random per call would be written by every
// core in turn, each write fetching it from the core before, as the shared
// line was. Two goroutines that hash to the same line collide on it (a
// compare-and-swap fails), and the collision changes the salt of the hash,
// which spreads the goroutines again, as LongAdder rehashes a thread's
// probe; the salt changes at most once per saltEvery collisions, so that
// many goroutines on a few lines do not keep writing it.
type Stripes struct {
	// salt is mixed into the hash of a goroutine's stack, raised every
	// saltEvery collisions on a line (counted there, on a line that is
	// contended already).
	salt  atomic.Uint64
	shift uint
	lines []stripe
	// aheadMs, the latest deadline of a block of pass numbers
	// (Tally.AheadMs), is written once a millisecond at most, on a line
	// apart from what every call reads.
	_       [64 - 40]byte
	aheadMs atomic.Int64
	_       [64 - 8]byte
}

// stripe is one line of Stripes: 128 bytes, two cache lines of its own (a
// pointer-free allocation of a power of two from 64 bytes up starts on a
// multiple of its size; TestStripesLinesAreAligned). counts holds the
// events a Tally keeps inline, block the line's pass numbers.
type stripe struct {
	counts     [kept]atomic.Int64
	collisions atomic.Uint64
	_          [64 - (kept+1)*8]byte
	block      numberBlock
}

// saltEvery is how many collisions on the lines change the salt.
const saltEvery = 64

// newStripes returns Stripes of GOMAXPROCS lines, rounded up to a power
// of two, at least two.
func newStripes() *Stripes {
	n := max(runtime.GOMAXPROCS(0), 2)
	lg := bits.Len(uint(n - 1))
	return &Stripes{shift: uint(64 - lg), lines: make([]stripe, 1<<lg)}
}

// add adds n to the count in slot i of the calling goroutine's line; a
// collision there counts towards a new salt.
func (s *Stripes) add(i Event, n int64) {
	l := &s.lines[s.line()]
	a := &l.counts[i]
	if old := a.Load(); a.CompareAndSwap(old, old+n) {
		return
	}
	if l.collisions.Add(1)%saltEvery == 0 {
		s.salt.Add(1)
	}
	a.Add(n)
}

// Add counts n events of kind ev, one of those a Tally keeps inline.
func (s *Stripes) Add(ev Event, n int64) { s.add(ev, n) }

// sum returns the count of ev, one of those a Tally keeps inline, on the
// lines: each line read after the ones before it, so that a later sum
// finds every count an earlier one found.
func (s *Stripes) sum(ev Event) int64 {
	var n int64
	for i := range s.lines {
		n += s.lines[i].counts[ev].Load()
	}
	return n
}

// addTo adds the lines' counts to totals. Each line is read after the ones
// before it, so that a later sum finds every count an earlier one found:
// marks taken so never decrease.
func (s *Stripes) addTo(totals *[NumEvents]int64) {
	for i := range s.lines {
		l := &s.lines[i]
		for ev := range kept {
			totals[ev] += l.counts[ev].Load()
		}
	}
}
