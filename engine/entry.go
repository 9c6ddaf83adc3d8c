package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// EntryOption adjusts one Entry call. Options are plain values, so passing
// them does not allocate: a call's params are options too, one each, read
// where they are given rather than gathered into a map or slice.
type EntryOption struct {
	count       int64
	noWait      bool
	prioritized bool
	inbound     bool
	origin      string
	paramKey    string
	paramValue  string
}

// WithOrigin names the caller (an app, a service, a tenant): authority
// rules allow or deny it, and flow rules with a limitApp count it apart.
func WithOrigin(origin string) EntryOption { return EntryOption{origin: origin} }

// WithParam gives the call's value of the parameter key (e.g. "ip",
// "header:X-User"), which hotspot rules with that paramKey limit per value.
// Give it once per parameter; a later value of the same key wins. The
// engine copies the value only when it starts tracking it, so callers that
// reuse string memory (Fiber) need not copy it first.
func WithParam(key, value string) EntryOption {
	return EntryOption{paramKey: key, paramValue: value}
}

// WithPrioritized lets the call, when a reject QPS rule's window is full,
// take quota from the coming window: it passes after a wait of at most
// OccupyTimeoutMs (slept, or owed with WithNoWait), counted when it goes.
func WithPrioritized() EntryOption { return EntryOption{prioritized: true} }

// WithInbound marks the call as inbound: one the process serves (an HTTP
// request it answers, a message it handles), as opposed to one it makes.
// System rules guard the inbound calls only, and only those feed the
// figures system rules read (inbound QPS, response time, calls in flight),
// kept while a system rule is loaded. A middleware that guards the
// requests a server answers marks each of them so.
func WithInbound() EntryOption { return EntryOption{inbound: true} }

// paramOf returns the value of the parameter key among opts.
func paramOf(opts []EntryOption, key string) (value string, ok bool) {
	for i := len(opts) - 1; i >= 0; i-- {
		if opts[i].paramKey == key {
			return opts[i].paramValue, true
		}
	}
	return "", false
}

// WithCount makes the call count as n (a batch); values below 1 count as 1.
func WithCount(n int64) EntryOption { return EntryOption{count: n} }

// WithNoWait makes a throttled call return at once with the wait it was
// given (Entry.WaitMs) instead of sleeping it; the caller owes the wait.
func WithNoWait() EntryOption { return EntryOption{noWait: true} }

// ExitOption adjusts one Exit call.
type ExitOption struct {
	err      error
	rtMs     int64
	rtSet    bool
	complete int64
}

// WithError reports the call's outcome: a non-nil err counts the call as an
// error (it still counts as complete, as in Sentinel).
func WithError(err error) ExitOption { return ExitOption{err: err} }

// WithRtMs reports the call's response time instead of the time measured
// between Entry and Exit.
func WithRtMs(ms int64) ExitOption { return ExitOption{rtMs: ms, rtSet: true} }

// WithCompleteCount counts n calls complete (and failed, with WithError)
// instead of the entry's count, for outcomes reported in other portions
// than the calls were let through in; every call of the entry still leaves
// flight. Values below 1 are ignored.
func WithCompleteCount(n int64) ExitOption { return ExitOption{complete: n} }

// BlockReason says which kind of rule blocked a call.
type BlockReason string

// Block reasons.
const (
	// ReasonFlow is a QPS flow rule (reject, throttling or warm-up).
	ReasonFlow BlockReason = "flow"
	// ReasonConcurrency is a flow rule on calls in flight.
	ReasonConcurrency BlockReason = "concurrency"
)

// BlockError tells a blocked caller which rule blocked it. Each rule builds
// its BlockError once, so blocking allocates nothing; treat it as read-only.
type BlockError struct {
	reason BlockReason
	rule   string
	limit  int64
	// tally counts the rule's blocks; nil for the engine's system rules,
	// which are counted as what a resource's rules did not block
	// (RuleBlocks).
	tally *blockTally
}

// Error describes the block.
func (b *BlockError) Error() string {
	return "sluice: blocked by " + string(b.reason) + " rule " + b.rule
}

// Reason returns the kind of rule that blocked the call.
func (b *BlockError) Reason() BlockReason { return b.reason }

// Rule returns the name of the rule that blocked the call.
func (b *BlockError) Rule() string { return b.rule }

// Limit returns the calls in flight an adaptive concurrency rule allowed
// when it blocked the call (ReasonAdaptive); 0 for other reasons, whose
// rules' thresholds are in their rules.
func (b *BlockError) Limit() int64 { return b.limit }

// Entry is a call that was let through. Call Exit exactly once when the call
// is done; it records completion, response time and the end of the call's
// concurrency. The zero Entry's Exit does nothing, and so does a second
// Exit or Release of an entry that holds a hotspot value's calls in
// flight or a breaker's probe; of any other, it counts the call again.
//
// An Entry is four words, so that the compiler keeps it in registers
// throughout: a larger one lives in the caller's memory, and the caller
// copies the call's result into it with loads wider than the stores just
// made, which stalls every call until the stores drain. So a call's rule
// set is not kept, unless it holds something of the set's (a breaker's
// probe, or calls in flight of hotspot values), which a record from a
// pool keeps (heldCall): Exit reports to the resource's rules as they are
// then, the breakers of a set loaded meanwhile included. A record is
// numbered each time it is given back, and the entry keeps the number it
// took, so that a copy of an entry exited or released already finds it
// ended and does nothing, rather than release what another call holds.
type Entry struct {
	res  *Resource
	held *heldCall // nil unless the call holds a probe or keys
	// startMs is when the call started, after its wait.
	startMs int64
	// call is whether the inbound statistics (of system rules) counted the
	// call (its lowest bit) and, without held, the call's count and its
	// wait in milliseconds (WaitMs, packCall); with held, which keeps
	// those, the record's number as the call took it (heldCall.gen).
	call uint64
}

// The fields of Entry.call, from the lowest bit: the inbound flag, the
// wait, and the count. A wait is at most MaxQueueingTimeMs (or
// OccupyTimeoutMs, borrowed): 17 bits hold it.
const (
	callInbound    = 1
	callWaitShift  = 1
	callCountShift = 18
	maxCallWaitMs  = 1<<(callCountShift-callWaitShift) - 1
	maxCallCount   = 1<<(64-callCountShift) - 1
)

// packCall returns Entry.call of a call of count that waited waitMs, and
// whether they fit in it.
func packCall(count, waitMs int64, inbound bool) (call uint64, fits bool) {
	if inbound {
		call = callInbound
	}
	if count > maxCallCount || waitMs > maxCallWaitMs {
		return call, false
	}
	return call | uint64(count)<<callCountShift | uint64(waitMs)<<callWaitShift, true
}

// heldCall is what a call holds of the rule set it found (rules): the
// probes of its half-open breakers, the hotspot values whose calls in
// flight count it, and its count and wait. Exit and Release give it back
// to heldCalls, so that neither entering nor exiting allocates once the
// pool has records.
type heldCall struct {
	// gen counts the times the record was given back: an entry whose
	// number it no longer is has ended.
	gen    atomic.Uint64
	rules  *ruleSet
	probes uint64 // bit i: a probe of rules.breakers[i], which is half-open
	keys   heldKeys
	count  int64
	waitMs int64
}

// heldCalls are the records of calls that hold nothing now.
var heldCalls = sync.Pool{New: func() any { return new(heldCall) }}

// hold returns a record of what a call holds, and Entry.call for it.
func hold(rules *ruleSet, probes uint64, keys heldKeys, count, waitMs int64, inbound bool) (*heldCall, uint64) {
	h := heldCalls.Get().(*heldCall)
	h.rules, h.probes, h.keys, h.count, h.waitMs = rules, probes, keys, count, waitMs
	call := h.gen.Load() << 1
	if inbound {
		call |= callInbound
	}
	return h, call
}

// recycle gives h back, for an entry that ended.
func (h *heldCall) recycle() {
	h.gen.Add(1)
	h.rules, h.probes, h.keys = nil, 0, heldKeys{}
	heldCalls.Put(h)
}

// ended reports whether the entry holds a record it gave back already.
func (e Entry) ended() bool {
	return e.held != nil && e.held.gen.Load() != e.call>>1
}

// count returns how many calls the entry counts as.
func (e Entry) count() int64 {
	if e.held != nil {
		return e.held.count
	}
	return int64(e.call >> callCountShift)
}

// WaitMs returns how long the call was queued by a throttling rule: slept
// already, or owed by the caller with WithNoWait.
func (e Entry) WaitMs() int64 {
	if e.ended() {
		return 0
	}
	if e.held != nil {
		return e.held.waitMs
	}
	return int64(e.call>>callWaitShift) & maxCallWaitMs
}

// countedInbound reports whether the inbound statistics counted the
// entry.
func (e Entry) countedInbound() bool { return e.call&callInbound != 0 }

// rules returns the rule set that Exit reports the call to: the one it
// found when it holds something of it, the resource's otherwise, and
// the probes it holds.
func (e Entry) rules() (*ruleSet, uint64) {
	if h := e.held; h != nil {
		return h.rules, h.probes
	}
	return e.res.rules.Load(), 0
}

// Entry asks for count calls (WithCount, default 1) to pass the resource's
// rules. A nil BlockError means the call may go ahead (after Entry.WaitMs when
// WithNoWait is given); the caller must then Exit the entry.
func (r *Resource) Entry(opts ...EntryOption) (Entry, *BlockError) {
	return enter(r, nil, "", opts)
}

// enter is Resource.Entry, of the resource eng names name when r is nil
// and eng is not (Engine.Entry). Both inline it, so that neither passes
// the Entry on through a frame of its own.
func enter(r *Resource, eng *Engine, name string, opts []EntryOption) (Entry, *BlockError) {
	if r == nil {
		if eng == nil {
			return Entry{}, nil
		}
		r = eng.named(name)
	}
	rs := r.rules.Load()
	if rs == evictedRules {
		r = r.current()
		rs = r.rules.Load()
	}
	now := r.cachedNow()
	if now == 0 {
		now = r.now()
	}
	if now >= rs.expiresAtMs {
		rs = r.expireRules(now)
	}
	count, noWait, prioritized, inbound, origin := int64(1), false, false, false, ""
	for _, o := range opts {
		if o.count > 1 {
			count = o.count
		}
		noWait = noWait || o.noWait
		prioritized = prioritized || o.prioritized
		inbound = inbound || o.inbound
		if o.origin != "" {
			origin = o.origin
		}
	}
	shadowBlocked, flow, more := false, rs.flow, rs.more
	var sys *inboundStats
	if inbound {
		var blk *BlockError
		if sys, shadowBlocked, blk = r.eng.checkInbound(now, count); blk != nil {
			r.recordBlock(now, count, nil)
			return Entry{}, blk
		}
	}
	if more != nil {
		for _, a := range more.authority {
			switch {
			case a.allows(origin):
			case a.shadow:
				shadowBlocked = true
			default:
				r.recordBlock(now, count, a.blocked)
				return Entry{}, a.blocked
			}
		}
		flow = more.flowAll
	}
	if a := rs.adaptive(); a != nil {
		// Before the in-flight count is raised for a concurrency rule:
		// the limit is what was in flight before the call.
		switch ok, blk := a.admits(r.Concurrency(), count); {
		case ok:
		case a.shadow:
			shadowBlocked = true
		default:
			r.recordBlock(now, count, blk)
			return Entry{}, blk
		}
	}
	if r.second.Stripes() != nil && count == 1 && !prioritized && !shadowBlocked && rs.numberedInBlocks(r) {
		// The statistics count the pass as its number is taken.
		if r.second.Open(now) {
			r.sampleInFlight(now)
		}
		if r.passFromBlock(rs.flow[0], now) {
			if sys != nil {
				sys.pass(now, count)
			}
			call, _ := packCall(count, 0, sys != nil)
			return Entry{res: r, startMs: now, call: call}, nil
		}
	}
	var inFlight int64
	if rs.reserveConcurrency {
		inFlight = r.second.ReserveInFlight(count)
	}
	// The flow rules decide on the resource's pass count as read here; the
	// call claims its passes on that count once every rule let it through.
	logged := len(rs.feeds) > 0
	var seen int64
	if logged {
		seen = r.passes().Load()
	}
	var waitNs, markMs int64
	var shadowFlow bool
	var blk *BlockError
	// A single common reject rule that enforces, the usual case, is
	// decided here as decideFlow would: its call and frame cost a pass
	// by handle about 4 of its 45 ns. A prioritized call, which may
	// borrow, and every other case go there.
	if len(flow) == 1 && flow[0].commonOn(r) && !flow[0].shadowMode && !prioritized {
		c := flow[0]
		markMs = now
		if !r.admits(c.passes, seen, count, int64(c.threshold), now, c.intervalMs) {
			blk = &c.blocked
		}
	} else {
		waitNs, markMs, shadowFlow, blk = decideFlow(r, flow, now, count, inFlight, seen, prioritized, false)
	}
	if blk != nil {
		if rs.reserveConcurrency {
			r.second.AddInFlight(-count)
		}
		r.recordBlock(now, count, blk)
		return Entry{}, blk
	}
	shadowBlocked = shadowBlocked || shadowFlow
	var probes uint64
	for i, b := range rs.breakers {
		ok, probe := b.tryPass(now)
		switch {
		case ok:
			if probe {
				probes |= 1 << i
			}
		case b.shadow:
			shadowBlocked = true
		default:
			cancelProbes(rs.breakers, probes)
			if rs.reserveConcurrency {
				r.second.AddInFlight(-count)
			}
			r.recordBlock(now, count, b.blocked)
			return Entry{}, b.blocked
		}
	}
	var held heldKeys
	if more != nil && len(more.keyed) > 0 {
		h, w, shadow, blk := enterKeyed(r, more, now, count, opts, origin)
		if blk != nil {
			cancelProbes(rs.breakers, probes)
			if rs.reserveConcurrency {
				r.second.AddInFlight(-count)
			}
			r.recordBlock(now, count, blk)
			return Entry{}, blk
		}
		held, waitNs, shadowBlocked = h, max(waitNs, w), shadowBlocked || shadow
	}
	// The statistics count claimed passes from the claim on: the call's
	// span of time starts before (Resource.recordPass).
	if r.second.Open(now) {
		r.sampleInFlight(now)
	}
	// Claim the passes: if other calls took some since the count was read,
	// the rules that read it decide again, so that two calls never both
	// take the last room of a window.
	for logged && !r.passes().CompareAndSwap(seen, seen+count) {
		seen = r.passes().Load()
		w, m, shadowFlow, blk := decideFlow(r, flow, now, count, inFlight, seen, prioritized, true)
		if blk != nil {
			cancelProbes(rs.breakers, probes)
			held.release(count)
			if rs.reserveConcurrency {
				r.second.AddInFlight(-count)
			}
			r.recordBlock(now, count, blk)
			return Entry{}, blk
		}
		waitNs, markMs, shadowBlocked = max(waitNs, w), max(markMs, m), shadowBlocked || shadowFlow
	}
	r.recordPass(now, markMs, count, seen+count, rs.reserveConcurrency, shadowBlocked, rs.feeds)
	if sys != nil {
		sys.pass(now, count)
	}
	startMs, waitMs := now, int64(0)
	if waitNs > 0 {
		waitMs = (waitNs + int64(time.Millisecond) - 1) / int64(time.Millisecond)
		startMs += waitMs
		if !noWait {
			r.clock.Sleep(time.Duration(waitNs))
		}
	}
	if call, fits := packCall(count, waitMs, sys != nil); probes == 0 && held.first == nil && fits {
		return Entry{res: r, startMs: startMs, call: call}, nil
	}
	h, call := hold(rs, probes, held, count, waitMs, sys != nil)
	return Entry{res: r, held: h, startMs: startMs, call: call}, nil
}

// decideFlow runs the flow rules on a call of count at now, the
// resource's pass count read as seen, and returns the longest wait they
// give, when the passes happen (later for quota a prioritized call
// borrows), whether a shadow rule would have blocked, or the block.
// Again, it runs only the rules that read the pass count: a throttling
// rule has already reserved its slot, and the others read nothing the
// claim changes.
func decideFlow(r *Resource, flow []*flowChecker, now, count, inFlight, seen int64, prioritized, again bool) (waitNs, markMs int64, shadowBlocked bool, blk *BlockError) {
	markMs = now
	for _, c := range flow {
		if again && (c.passes == nil || c.stat != r || c.throttle() != nil) {
			continue
		}
		var ok bool
		var w int64
		if c.commonOn(r) {
			ok = r.admits(c.passes, seen, count, int64(c.threshold), now, c.intervalMs)
		} else {
			ok, w = c.check(r, now, count, inFlight, seen)
		}
		if !ok && prioritized {
			if wait, at, lent := c.borrow(r, now, count, seen); lent {
				ok, w, markMs = true, wait*int64(time.Millisecond), max(markMs, at)
			}
		}
		switch {
		case !ok && c.shadow():
			shadowBlocked = true
		case !ok && c.cluster() != nil && c.cluster().fallback.Load() != nil:
			return 0, 0, false, c.cluster().fallbackBlocked
		case !ok:
			return 0, 0, false, &c.blocked
		case w > waitNs && !c.shadow():
			waitNs = w
		}
	}
	return waitNs, markMs, shadowBlocked, nil
}

// Release ends the call's concurrency without recording its completion, for
// callers that learn the outcome later or never (the HTTP check API reports
// it with Resource.RecordComplete). Call Release or Exit, not both.
func (e Entry) Release() {
	if e.res == nil || e.ended() {
		return
	}
	count := e.count()
	e.res.second.AddInFlight(-count)
	if e.countedInbound() {
		e.res.eng.system.stats.concurrency.Add(-count)
	}
	if h := e.held; h != nil {
		h.keys.release(count)
		cancelProbes(h.rules.breakers, h.probes)
		h.recycle()
	}
}

// cancelProbes gives back the probe slots of the breakers in mask.
func cancelProbes(breakers []*breaker, mask uint64) {
	for i, b := range breakers {
		if mask&(1<<i) != 0 {
			b.cancelProbe()
		}
	}
}

// Exit ends the call: it counts it complete (and an error with WithError),
// records its response time and releases its concurrency.
func (e Entry) Exit(opts ...ExitOption) {
	r := e.res
	if r == nil || e.ended() {
		return
	}
	now := r.cachedNow()
	if now == 0 {
		now = r.now()
	}
	count := e.count()
	rt := now - e.startMs
	complete, failed := count, false
	for _, o := range opts {
		failed = failed || o.err != nil
		if o.rtSet {
			rt = o.rtMs
		}
		if o.complete > 0 {
			complete = o.complete
		}
	}
	rt = max(rt, 0)
	var errors int64
	if failed {
		errors = complete
	}
	if e.held != nil {
		e.held.keys.release(count)
	}
	r.recordComplete(now, complete, rt, errors, count)
	if e.countedInbound() {
		r.eng.system.stats.complete(now, count, complete, rt, errors)
	}
	rules, probes := e.rules()
	for i, b := range rules.breakers {
		b.onComplete(now, complete, rt, failed, probes&(1<<i) != 0)
	}
	if a := rules.adaptive(); a != nil {
		a.observe(now)
	}
	if e.held != nil {
		e.held.recycle()
	}
}

// RecordComplete records count calls that completed in rtMs each, failed
// ones as errors too, without an Entry: for outcomes reported after the
// entry was released.
func (r *Resource) RecordComplete(count, rtMs int64, failed bool) {
	if r == nil || count < 1 {
		return
	}
	r = r.current()
	var errors int64
	if failed {
		errors = count
	}
	now := r.now()
	r.recordComplete(now, count, rtMs, errors, 0)
	rs := r.rules.Load()
	for _, b := range rs.breakers {
		b.onComplete(now, count, rtMs, failed, false)
	}
	if a := rs.adaptive(); a != nil {
		a.observe(now)
	}
}

// NeedsExit reports whether the entry must be exited, not released at
// once, when its outcome is to be reported later: a concurrency rule counts
// it in flight (its resource's, or an associated one's, or an adaptive
// concurrency rule's), or it is a probe a half-open circuit breaker waits
// for. An ended entry needs nothing.
func (e Entry) NeedsExit() bool {
	return e.CountsInFlight() || e.held != nil && !e.ended() && e.held.probes != 0
}

// CountsInFlight reports whether a concurrency rule (of the entry's
// resource, or of one associated with it, or a hotspot rule of its
// parameter values) reads the entry's calls in flight: only their own
// end may then end them. An entry that needs an Exit without it is only a
// half-open breaker's probe.
func (e Entry) CountsInFlight() bool {
	if e.res == nil || e.ended() {
		return false
	}
	rules, _ := e.rules()
	return rules.inFlightMatters || e.held != nil && e.held.keys.first != nil
}
