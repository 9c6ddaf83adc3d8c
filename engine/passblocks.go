package engine

import "github.com/sluicehq/sluice/engine/window"

// A contended resource whose only rule is a common reject rule numbers its
// passes in blocks per core while the rule is far from its threshold
// (window.Tally.ClaimBlock): a call takes the next number of its core's
// block, on that core's line, and the call that finds the block used up
// claims the next one on the shared counter, its room decided for all the
// block's numbers at once, which hold for their later use since windows
// only move forward. The pass log marks the block's numbers at its
// deadline, no earlier than any of them is used, and every later number no
// earlier than that (window.Tally.AheadMs), so that its marks never
// decrease in the order of the numbers. A rule of any other kind, option
// or company, a call of more than one or a prioritized call, and every
// call near the threshold number their passes one at a time, exactly.

// numberedInBlocks reports whether the passes of r, s being its rules, may
// be numbered in blocks: its one rule, a common reject rule that enforces,
// is the only one that reads them, and nothing else decides its calls or
// reads their count in flight.
func (s *ruleSet) numberedInBlocks(r *Resource) bool {
	return len(s.flow) == 1 && len(s.feeds) == 1 && s.more == nil && len(s.breakers) == 0 && !s.inFlightMatters &&
		s.flow[0].commonOn(r) && !s.flow[0].shadowMode && s.flow[0].passes == s.feeds[0]
}

// passFromBlock lets a call of one at nowMs through c, r's one rule
// (numberedInBlocks), on a number of its core's block, after Open:
// one left, or the first of a block it claims while c is far from its
// threshold. It reports false when the call must be decided exactly.
func (r *Resource) passFromBlock(c *flowChecker, nowMs int64) bool {
	line, ok := r.second.TakeNumber(nowMs)
	if ok || line < 0 {
		return ok
	}
	size, budget, room := r.second.BlockSize(c.passes.Slack(), c.intervalMs)
	if size < 2 {
		return false
	}
	for {
		seen := r.passes().Load()
		if !r.admits(c.passes, seen, room, int64(c.threshold), nowMs, c.intervalMs) {
			return false
		}
		switch r.second.ClaimBlock(line, seen, size, budget, nowMs) {
		case window.BlockClaimed:
			c.passes.Mark(r.second.AheadMs(), seen+size)
			return true
		case window.BlockRefused:
			return false
		}
		if _, ok := r.second.TakeNumber(nowMs); ok {
			return true
		}
	}
}
