package window

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// A contended resource's passes are numbered in blocks per line while its
// rule is far from its threshold: a call takes the next number of its
// line's block (Tally.TakeNumber), written on that line only, and the call
// that finds it used up claims the next block of numbers on the shared
// counter with one compare-and-swap (Tally.ClaimBlock), its admission
// decided for all of them at once. A block's numbers may be used until its
// deadline, a reading blockLifeMs after its claim, and never after: the
// pass logs mark its groups with a time no earlier than the deadline
// (AheadMs), as they mark later numbers, so that marks never decrease in
// the order of the numbers.
//
// A block's numbers that are not used by its deadline are given up when
// its line claims the next: the pass logs count them as passes for an
// interval, and the statistics never count them (Tally.passed). A line
// gives up at most a budget of numbers in each dropBucketMs, and claims no
// block that could take it past it: see BlockSize for the bound this
// keeps.
const (
	// blockLifeMs is how long after its claim a block's numbers may be
	// used: a reading of the clock and the next, so that the marks of
	// its numbers are at most a millisecond late, as a real clock's
	// readings are.
	blockLifeMs = 1
	// minBlockIntervalMs is the shortest window a rule numbered in blocks
	// may have: a millisecond late, its marks hold a pass at most a
	// thousandth of the window longer than it should, as a real clock's
	// lag of a tick already does.
	minBlockIntervalMs = 1000
	// maxBlock is the most numbers a block holds: past it, the shared
	// counter's trips are too few to matter.
	maxBlock = 64
	// farBlocks is how many blocks of every line must fit after a block
	// for it to be claimed: near the threshold, calls claim their numbers
	// one at a time, exactly.
	farBlocks = 4
	// dropBucketMs is the span, aligned, over which a line's numbers
	// given up are budgeted: twice the second a Tally keeps, so that the
	// last second's are in the newest two (CloseBlocks).
	dropBucketMs = 2048
	// closedMs is how long CloseBlocks locks the lines out of blocks: a
	// call that read the rules before a new log took their place claims
	// no block after it, unless it is that late.
	closedMs = 2 * Spans * SpanMs
)

// The bits of numberBlock.state: a writer between its claim and its
// publication (pending), a line locked out of blocks (locked, until
// deadlineMs), the numbers left, and from bit 32 a sequence that each
// claim raises.
const (
	blockPending = 1
	blockLocked  = 2
	leftShift    = 2
	leftMask     = 1<<30 - 1
	seqShift     = 32
)

// numberBlock is a line's block of pass numbers, on a cache line of its
// own: its numbers hi-left+1 … hi are left, usable at readings up to
// deadlineMs. Its fields other than state are written only while state is
// pending, by the writer that made it so: a reader that finds state's
// sequence the same before and after reading them read one block's.
type numberBlock struct {
	state      atomic.Uint64
	hi         atomic.Int64
	deadlineMs atomic.Int64
	// dropped counts the numbers the line gave up, in all, and droppedHi
	// is the last number of the last block it gave up numbers of.
	dropped   atomic.Int64
	droppedHi atomic.Int64
	// dropsCur are the numbers given up in the span of dropBucketMs
	// number dropBucket, dropsPrev in the span before.
	dropBucket atomic.Int64
	dropsCur   atomic.Int64
	dropsPrev  atomic.Int64
}

// BlockClaim is what Tally.ClaimBlock did.
type BlockClaim int

// The outcomes of Tally.ClaimBlock.
const (
	// BlockClaimed: the call has the block's first number, its line the
	// rest.
	BlockClaimed BlockClaim = iota
	// BlockRaced: another call claimed numbers, or a block on the line,
	// meanwhile: take a number, or decide again on the counter.
	BlockRaced
	// BlockRefused: the line may not claim a block now; number the call
	// exactly.
	BlockRefused
)

// line returns the index of the calling goroutine's line: a goroutine's
// stack is at least 2 KiB and aligned to its size, so above bit 11 the
// address is the goroutine's (until its stack grows and moves), below it
// the depth of the call.
func (s *Stripes) line() int {
	var here byte
	g := uint64(uintptr(unsafe.Pointer(&here)) >> 11)
	return int(((g ^ s.salt.Load()) * 0x9e3779b97f4a7c15) >> s.shift)
}

// TakeNumber uses the next number of the calling goroutine's line's block
// for a pass at nowMs, after Open, and reports whether there was one; line
// is that line for ClaimBlock, -1 when t has no Stripes (it never
// collided, and numbers its passes one at a time).
func (t *Tally) TakeNumber(nowMs int64) (line int, ok bool) {
	s := t.stripes.Load()
	if s == nil {
		return -1, false
	}
	line = s.line()
	b := &s.lines[line].block
	for {
		w := b.state.Load()
		if w&(blockPending|blockLocked) != 0 || w>>leftShift&leftMask == 0 || nowMs > b.deadlineMs.Load() {
			return line, false
		}
		// The deadline read is w's block's: a claim that replaced it
		// changed state first.
		if b.state.CompareAndSwap(w, w-1<<leftShift) {
			return line, true
		}
	}
}

// BlockSize returns the numbers a block may hold for a rule of
// intervalMs whose log counts up to slack passes too many, the numbers
// each line may give up in a span of dropBucketMs (budget), and the room
// that must be left under the threshold for a block to be claimed; size is
// below 2 when blocks are not worth it, or the window is shorter than
// minBlockIntervalMs.
//
// The unused numbers that the log counts in a window of intervalMs are
// those of the blocks whose deadlines are in it: on a line, all but the
// last were given up within it, so in the spans it overlaps, at most
// intervalMs/dropBucketMs+2 of them and at most budget in each, and the
// last holds at most size-1 <= budget. So a window counts at most
// (intervalMs/dropBucketMs+3)*budget unused numbers per line, at most
// slack in all: the log counts at most twice its own slack too many.
func (t *Tally) BlockSize(slack, intervalMs int64) (size, budget, room int64) {
	s := t.stripes.Load()
	if s == nil || intervalMs < minBlockIntervalMs {
		return 0, 0, 0
	}
	lines := int64(len(s.lines))
	budget = slack / lines / (3 + intervalMs/dropBucketMs)
	size = min(maxBlock, 1+budget)
	return size, budget, size * (1 + farBlocks*lines)
}

// ClaimBlock claims the numbers seen+1 … seen+size of the shared counter,
// if it still is at seen, for a pass at nowMs on line (TakeNumber's),
// after Open: the caller uses the first, the line the rest until
// blockLifeMs after nowMs, and the caller then marks them all in the pass
// logs at AheadMs. It gives up the numbers the line's block has left past
// its deadline, and refuses a block that could take the numbers given up
// in the current span of dropBucketMs past budget (BlockSize's).
func (t *Tally) ClaimBlock(line int, seen, size, budget, nowMs int64) BlockClaim {
	s := t.stripes.Load()
	b := &s.lines[line].block
	w := b.state.Load()
	left := int64(w >> leftShift & leftMask)
	locked := w&blockLocked != 0
	switch {
	case w&blockPending != 0 || !locked && left > 0 && nowMs <= b.deadlineMs.Load():
		return BlockRaced
	case locked && nowMs < b.deadlineMs.Load(), b.dropsIn(nowMs/dropBucketMs)+left+size-1 > budget:
		return BlockRefused
	}
	next := (w>>seqShift + 1) << seqShift
	if !b.state.CompareAndSwap(w, next|blockPending) {
		return BlockRaced
	}
	if left > 0 {
		b.drop(left, nowMs)
	}
	deadlineMs := nowMs + blockLifeMs
	// Before the numbers are claimed: a call that claims the numbers
	// after them reads it after, and marks them no earlier.
	storeMax(&s.aheadMs, deadlineMs)
	b.hi.Store(seen + size)
	b.deadlineMs.Store(deadlineMs)
	if !t.claimed.CompareAndSwap(seen, seen+size) {
		b.state.Store(next)
		return BlockRaced
	}
	b.state.Store(next | uint64(size-1)<<leftShift)
	return BlockClaimed
}

// dropsIn returns the numbers given up in the span of dropBucketMs
// number bucket, if it is the newest.
func (b *numberBlock) dropsIn(bucket int64) int64 {
	if bucket != b.dropBucket.Load() {
		return 0
	}
	return b.dropsCur.Load()
}

// drop gives up the left numbers of the block, at nowMs, while state is
// pending.
func (b *numberBlock) drop(left, nowMs int64) {
	b.dropped.Add(left)
	b.droppedHi.Store(b.hi.Load())
	switch bucket, was := nowMs/dropBucketMs, b.dropBucket.Load(); {
	case bucket == was:
	case bucket == was+1:
		b.dropsPrev.Store(b.dropsCur.Load())
		b.dropsCur.Store(0)
		b.dropBucket.Store(bucket)
	default:
		b.dropsPrev.Store(0)
		b.dropsCur.Store(0)
		b.dropBucket.Store(bucket)
	}
	b.dropsCur.Add(left)
}

// AheadMs returns the latest deadline of a block claimed on t: the pass
// logs mark the numbers claimed after it no earlier. It is far in the
// past when t has no Stripes, and so no blocks.
func (t *Tally) AheadMs() int64 {
	if s := t.stripes.Load(); s != nil {
		return s.aheadMs.Load()
	}
	return never
}

// CloseBlocks gives up the numbers left in the lines' blocks and locks
// every line out of blocks for closedMs from nowMs, for a pass log about
// to number t's passes from the counter and the last second's spans: no
// block claimed under the log it replaces is used after. It returns the
// numbers the lines gave up in the newest two spans of dropBucketMs, a
// bound on those among the last second's numbers that were never used,
// which the new log counts as passes at nowMs.
func (t *Tally) CloseBlocks(nowMs int64) (unused int64) {
	s := t.stripes.Load()
	if s == nil {
		return 0
	}
	for i := range s.lines {
		unused += s.lines[i].block.close(nowMs)
	}
	return unused
}

// close is CloseBlocks for one line's block: it returns the numbers the
// line gave up in the newest two spans.
func (b *numberBlock) close(nowMs int64) int64 {
	for {
		w := b.state.Load()
		next := (w>>seqShift + 1) << seqShift
		if w&blockPending != 0 || !b.state.CompareAndSwap(w, next|blockPending) {
			runtime.Gosched()
			continue
		}
		if left := int64(w >> leftShift & leftMask); left > 0 {
			b.drop(left, nowMs)
		}
		lockedUntil := nowMs + closedMs
		if w&blockLocked != 0 {
			lockedUntil = max(lockedUntil, b.deadlineMs.Load())
		}
		b.deadlineMs.Store(lockedUntil)
		unused := b.dropsIn(nowMs/dropBucketMs) + b.dropsIn(nowMs/dropBucketMs-1)
		if nowMs/dropBucketMs == b.dropBucket.Load() {
			unused += b.dropsPrev.Load()
		}
		b.state.Store(next | blockLocked)
		return unused
	}
}

// unused returns how many of the numbers up to claimed, a value the shared
// counter had before the call, the lines' blocks hold unused or gave up:
// numbers that are no passes. ok is false when a line gave up numbers
// claimed after it: the caller reads the counter again. A block is claimed
// whole, so it is all at or before claimed or all after; its numbers are
// counted unused only while they are (left only falls, and what falls is
// passes), so that a later read, of a later counter, finds every pass an
// earlier one found.
func (s *Stripes) unused(claimed int64) (n int64, ok bool) {
	for i := range s.lines {
		left, ok := s.lines[i].block.unused(claimed)
		if !ok {
			return 0, false
		}
		n += left
	}
	return n, true
}

// unused is Stripes.unused for one line's block.
func (b *numberBlock) unused(claimed int64) (n int64, ok bool) {
	for {
		w := b.state.Load()
		if w&blockPending != 0 {
			runtime.Gosched()
			continue
		}
		hi, dropped, droppedHi := b.hi.Load(), b.dropped.Load(), b.droppedHi.Load()
		again := b.state.Load()
		if again>>seqShift != w>>seqShift || again&blockPending != 0 {
			continue
		}
		if droppedHi > claimed {
			return 0, false
		}
		if hi <= claimed {
			dropped += int64(again >> leftShift & leftMask)
		}
		return dropped, true
	}
}
