package engine

import (
	"sync"
	"sync/atomic"
)

// ReasonClusterFallback is a cluster flow rule that blocked on its local
// fallback (clusterFallback "local" or "block") while the shared count was
// out of reach: a flow rule's block the fleet's count did not decide.
const ReasonClusterFallback BlockReason = "clusterFallback"

// BlockReasons are the reasons a block has, each once.
var BlockReasons = [...]BlockReason{ReasonFlow, ReasonConcurrency, ReasonCircuitBreaker, ReasonHotspot,
	ReasonAuthority, ReasonSystem, ReasonAdaptive, ReasonClusterFallback}

// RuleBlocks is the calls one rule blocked, or, with Rule empty and Reason
// ReasonSystem, the calls blocked by no rule of the resource's own: the
// engine's system rules, which guard every inbound call and are not
// counted per resource, and refusals tallied from outside the engine
// (Resource.Tally).
type RuleBlocks struct {
	Reason  BlockReason
	Rule    string
	Blocked int64
}

// blockTally counts a rule's blocks in each of the last two minutes: the
// rule's own running count, so that a resource without rules pays nothing
// for it and a rule 16 bytes. Each slot packs a minute's tag (its number,
// plus one, modulo tagSpan, so that zero is no minute) over its count.
type blockTally struct {
	slots [2]atomic.Uint64
}

const (
	countBits = 40
	countMask = 1<<countBits - 1
	// tagSpan minutes (about 16 years) tell a slot's minute apart from any
	// other the engine still reads.
	tagSpan = 1 << 23
)

// minuteTag returns the minute of nowMs's number and tag.
func minuteTag(nowMs int64) (minute int64, tag uint64) {
	minute = floorDiv(nowMs, minuteMs)
	return minute, uint64(minute%tagSpan+tagSpan)%tagSpan + 1
}

// floorDiv is a / b rounded down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// add counts n blocks at nowMs; a minute's count stops at 2^40 − 1.
func (t *blockTally) add(nowMs, n int64) {
	minute, tag := minuteTag(nowMs)
	s := &t.slots[minute&1]
	c := uint64(min(n, countMask))
	if v := s.Load(); v>>countBits == tag && v&countMask+c <= countMask {
		// The minute's slot already: one add, which a drain meanwhile
		// (it zeroes the count, keeping the tag) does not lose.
		s.Add(c)
		return
	}
	for {
		v := s.Load()
		next := tag<<countBits | c
		if v>>countBits == tag {
			next = tag<<countBits | min(v&countMask+c, countMask)
		}
		if s.CompareAndSwap(v, next) {
			return
		}
	}
}

// drain appends to out the blocks counted since the last drain, per
// minute, each minute read as the latest with its tag up to nowMs, and
// leaves the slots at zero.
func (t *blockTally) drain(nowMs int64, reason BlockReason, rule string, out []minuteBlocks) []minuteBlocks {
	now, nowTag := minuteTag(nowMs)
	for i := range t.slots {
		s := &t.slots[i]
		for {
			v := s.Load()
			if v&countMask == 0 {
				break
			}
			tag := v >> countBits
			if s.CompareAndSwap(v, tag<<countBits) {
				back := (int64(nowTag) - int64(tag) + tagSpan) % tagSpan
				out = append(out, minuteBlocks{startMs: (now - back) * minuteMs,
					RuleBlocks: RuleBlocks{Reason: reason, Rule: rule, Blocked: int64(v & countMask)}})
				break
			}
		}
	}
	return out
}

// minuteBlocks is one rule's blocks in the minute that starts at startMs.
type minuteBlocks struct {
	startMs int64
	RuleBlocks
}

// blockSource is a rule's block tally, with what it is handed out as.
type blockSource struct {
	reason BlockReason
	rule   string
	tally  *blockTally
}

// newBlockError returns the BlockError of a rule, with the tally its
// blocks are counted in.
func newBlockError(reason BlockReason, rule string) *BlockError {
	return &BlockError{reason: reason, rule: rule, tally: new(blockTally)}
}

// blockSources returns the tallies of s's rules.
func (s *ruleSet) blockSources() []blockSource {
	var out []blockSource
	add := func(b *BlockError) {
		out = append(out, blockSource{reason: b.reason, rule: b.rule, tally: b.tally})
	}
	for _, c := range s.flow {
		add(&c.blocked)
		if cs := c.cluster(); cs != nil {
			add(cs.fallbackBlocked)
		}
	}
	for _, b := range s.breakers {
		add(b.blocked)
	}
	for _, c := range s.hotspot() {
		add(c.blocked)
	}
	for _, c := range s.authority() {
		add(c.blocked)
	}
	if a := s.adaptive(); a != nil {
		out = append(out, blockSource{reason: ReasonAdaptive, rule: a.rule.Name, tally: a.blocks})
	}
	return out
}

// orphanBlocks are the tallies of rules a resource no longer has, still
// collected for a while: the blocks they counted since the last collection,
// and those of calls that read the rules before they went.
type orphanBlocks struct {
	mu   sync.Mutex
	list []orphanBlock
}

type orphanBlock struct {
	res  *Resource
	src  blockSource
	atMs int64 // when the rule went
}

// storeRules publishes s as r's rules; the tallies of the rules it drops
// are kept for CollectMinutes.
func (r *Resource) storeRules(s *ruleSet) {
	old := r.rules.Swap(s)
	if old == nil || old == s {
		return
	}
	gone := old.blockSources()
	if len(gone) == 0 {
		return
	}
	kept := make(map[*blockTally]bool)
	for _, src := range s.blockSources() {
		kept[src.tally] = true
	}
	o := &r.eng.orphans
	now := r.eng.clock.NowMs()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, src := range gone {
		if !kept[src.tally] {
			o.list = append(o.list, orphanBlock{res: r, src: src, atMs: now})
		}
	}
}

// take returns, by resource, what the tallies of dropped rules
// counted since the last call, and forgets those dropped before keepMs.
func (o *orphanBlocks) take(nowMs, keepMs int64) map[*Resource][]minuteBlocks {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out map[*Resource][]minuteBlocks
	kept := o.list[:0]
	for _, ob := range o.list {
		if got := ob.src.tally.drain(nowMs, ob.src.reason, ob.src.rule, nil); len(got) > 0 {
			if out == nil {
				out = map[*Resource][]minuteBlocks{}
			}
			out[ob.res] = append(out[ob.res], got...)
		}
		if ob.atMs > keepMs {
			kept = append(kept, ob)
		}
	}
	clear(o.list[len(kept):])
	o.list = kept
	return out
}
