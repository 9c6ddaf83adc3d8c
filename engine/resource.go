package engine

import (
	"math"
	"strings"
	"sync/atomic"

	"github.com/sluicehq/sluice/engine/window"
)

// secondSamples is how many buckets a second-long window has: a
// Resource's (window.Spans) and, by default, a circuit breaker's.
const secondSamples = window.Spans

// minuteMs is the length of the minutes the engine hands out.
const minuteMs = window.MinuteMs

// secondIntervalMs is the length of the second-long windows (the system
// rules' inbound window).
const secondIntervalMs = 1000

// Resource is the statistics and rules of one named resource. Hold the handle
// from Engine.Resource to call Entry without a name lookup. A handle the
// engine evicted (Evicted) keeps working: each call goes to the resource the
// engine tracks under the name by then. A nil *Resource, which the engine
// never hands out, lets every call pass uncounted.
//
// Its fields are laid out for two cores calling at once: the first cache
// line holds what every call reads and only rule loads write; the second
// what every call writes, the pass count and the totals the statistics
// are kept in (window.Tally), of which the calls in flight are derived,
// so that a call writes one line; once calls on several cores collide on
// it, the statistics go to a line per core (window.Stripes), and only the
// pass numbering that flow rules read stays on it. A Resource is 512
// bytes, a size class of whole lines
// (TestResourceLayout); a byte more and, as a pointerful object past 512
// bytes carries an 8-byte header, it would take the 576-byte class with
// its lines off by those 8 bytes.
type Resource struct {
	name        string
	clock       Clock
	realClock   *RealClock // the clock again when it is the cached real one, read without an interface call
	firstSeenMs int64
	rules       atomic.Pointer[ruleSet] // evictedRules once the engine forgot the resource
	// eng looks the name up again for calls through an evicted handle.
	eng *Engine

	// second counts every call, and so its calls in flight: its claimed
	// passes (passes) and totals fill the second line, then come its marks
	// of the last second and minutes.
	second window.Tally
}

// ruleSet is everything Entry needs for one resource, swapped whole on load.
type ruleSet struct {
	flow     []*flowChecker
	breakers []*breaker
	// more holds the rules of the kinds most resources have none of, nil
	// if none, so that a resource without pays one pointer for them.
	more *moreRules
	// feeds are the pass logs of the rules (of this or other resources)
	// that measure this resource's passes.
	feeds []*window.PassLog
	// reserveConcurrency: a concurrency rule of this resource counts the
	// caller itself, so the in-flight count is raised before the checks.
	reserveConcurrency bool
	// inFlightMatters: a concurrency rule, of this resource or one
	// associated with it, or its adaptive concurrency rule, reads this
	// resource's calls in flight.
	inFlightMatters bool
	// expiresAtMs is when the first of the set's rules expires (noExpiry
	// if none does): past it, Entry has the set without it published once
	// (Resource.expireRules), so a call pays one compare for expiry.
	expiresAtMs int64
}

// noExpiry is the expiresAtMs of a rule set none of whose rules expires.
const noExpiry = math.MaxInt64

// moreRules is the hotspot, authority and adaptive concurrency rules of a
// resource, and what Entry derives from its rules when it has those or
// flow rules with a limitApp (ruleSet.derive).
type moreRules struct {
	hotspot   []*keyedChecker
	authority []*authorityChecker
	// adaptive is the resource's adaptive concurrency rule, nil if none:
	// here rather than in every rule set, whose 8 bytes took it past 96.
	adaptive *adaptiveLimiter
	// flowAll are the flow rules that count every caller together; keyed
	// the rules that count per key, the flow rules with a limitApp and the
	// hotspot rules; namedOrigins the origins the former name, which
	// limitApp other leaves to them.
	flowAll      []*flowChecker
	keyed        []*keyedChecker
	namedOrigins map[string]struct{}
}

// hotspot returns s's hotspot rules.
func (s *ruleSet) hotspot() []*keyedChecker {
	if s.more == nil {
		return nil
	}
	return s.more.hotspot
}

// adaptive returns s's adaptive concurrency rule, nil if none.
func (s *ruleSet) adaptive() *adaptiveLimiter {
	if s.more == nil {
		return nil
	}
	return s.more.adaptive
}

// authority returns s's authority rules.
func (s *ruleSet) authority() []*authorityChecker {
	if s.more == nil {
		return nil
	}
	return s.more.authority
}

// edit returns s's moreRules to change, made if need be.
func (s *ruleSet) edit() *moreRules {
	if s.more == nil {
		s.more = &moreRules{}
	}
	return s.more
}

var noRules = &ruleSet{expiresAtMs: noExpiry}

// evictedRules marks a resource the engine evicted: Entry, which loads the
// rules first anyway, tells it from the others without another load.
var evictedRules = &ruleSet{expiresAtMs: noExpiry}

func (e *Engine) newResource(name string) *Resource {
	e.created.Add(1)
	r := &Resource{name: strings.Clone(name), eng: e, clock: e.clock, firstSeenMs: e.clock.NowMs()}
	r.realClock, _ = e.clock.(*RealClock)
	r.second.Init()
	r.rules.Store(noRules)
	return r
}

// mustInit sets up a window whose shape the engine chose itself.
func mustInit(la *window.LeapArray, samples int, intervalMs int64, buf []window.Bucket) {
	if err := la.Init(samples, intervalMs, buf); err != nil {
		panic(err)
	}
}

// passes counts the passes while the pass log of a rule reads them: the
// numbers the logs go by.
func (r *Resource) passes() *atomic.Int64 { return r.second.Claimed() }

// Name returns the resource's name.
func (r *Resource) Name() string { return r.name }

// FirstSeenMs returns when the engine first saw the resource.
func (r *Resource) FirstSeenMs() int64 { return r.firstSeenMs }

// Concurrency returns the calls in flight: the passes less the
// completions (window.Tally.InFlight), exact when no call enters or
// leaves while they are read, and never fewer than were in flight then.
func (r *Resource) Concurrency() int64 { return r.second.InFlight() }

// sampleInFlight records the calls in flight of a contended resource in
// the minute's most, for the call that started a span of nowMs: the calls
// counted on stripes do not know the sum, so the minute's most is sampled
// once a span.
func (r *Resource) sampleInFlight(nowMs int64) {
	if r.second.Stripes() != nil {
		r.second.Extremes(nowMs).ObserveConcurrency(r.Concurrency())
	}
}

// Evicted reports whether the engine has forgotten the resource, idle and
// named by no rule. Calls through the handle still count, each under a
// fresh lookup of the name; callers that keep handles should ask
// Engine.Resource again.
func (r *Resource) Evicted() bool { return r.rules.Load() == evictedRules }

// current is the resource that counts the handle's calls now: r itself, or
// once r is evicted, what the engine tracks under its name.
func (r *Resource) current() *Resource {
	for r.Evicted() {
		r = r.eng.Resource(r.name)
	}
	return r
}

// now reads the clock.
func (r *Resource) now() int64 {
	if now := r.cachedNow(); now != 0 {
		return now
	}
	return r.clock.NowMs()
}

// cachedNow is the real clock's cached reading, when the ticker runs and
// was read since its last refresh, read in place, or 0: the caller then
// reads the clock (now). Entry and Exit read it so first, since two calls
// (now and the clock's NowMs) on every reading cost the one-goroutine
// pass path more than the loads themselves, and now with the clock's
// interface call does not inline.
func (r *Resource) cachedNow() int64 {
	if c := r.realClock; c != nil && c.touched.Load() {
		return c.nowMs.Load()
	}
	return 0
}

// slackMs is how far behind real time the clock's readings within the
// last withinMs may have been; a manual clock is exact.
func (r *Resource) slackMs(withinMs int64) int64 {
	if r.realClock != nil {
		return r.realClock.SlackMs(withinMs)
	}
	return 0
}

// horizon is what a pass log of r's passes needs to forget those out of
// every window of intervalMs (a rule's) that a decision reads.
func (r *Resource) horizon(intervalMs int64) window.Horizon {
	if r.realClock == nil {
		return window.Horizon{IntervalMs: intervalMs}
	}
	return window.Horizon{IntervalMs: intervalMs, Clock: r.realClock}
}

// realNowMs is a reading no earlier than real time, for a call the clock
// read nowMs for: the real clock's readings lag, and a call that waits
// from now must be recorded when its wait ends in real time, so that
// Resource.admits may trust the replacement of its reading.
func (r *Resource) realNowMs(nowMs int64) int64 {
	if r.realClock == nil {
		return nowMs
	}
	return max(nowMs, r.realClock.ceilMs())
}

// admits reports whether count more passes leave at most capacity of the
// passes in log, numbered up to total, in any real window of intervalMs
// that holds a call made at the reading nowMs. A pass is recorded at the
// clock's reading, which may lag real time by the clock's slack, so each
// is held that much longer; at the window's edge, where only the slack
// blocks, the clock tells when the reading of the pass that must leave
// was replaced, and that pass happened before then.
func (r *Resource) admits(log *window.PassLog, total, count, capacity, nowMs, intervalMs int64) bool {
	atMs, known := log.FreeAtMs(total, count, capacity)
	// roomAfter's first verdict, written out: most calls stop there.
	return known && atMs <= nowMs-intervalMs-r.slackMs(intervalMs) || r.roomAfter(atMs, known, nowMs, intervalMs)
}

// roomAfter is admits' verdict once the log said when the pass that must
// leave happened (atMs), if it knew (known): for the pass logs of flow
// rules and of hotspot values alike.
func (r *Resource) roomAfter(atMs int64, known bool, nowMs, intervalMs int64) bool {
	switch {
	case !known:
		return false
	case atMs <= nowMs-intervalMs-r.slackMs(intervalMs):
		return true
	}
	return r.realClock != nil && atMs <= nowMs-intervalMs+r.realClock.SlackMs(0) && r.realClock.ReplacedBy(atMs, intervalMs)
}

// recordPass records count passes at nowMs, which happen at markMs (a
// prioritized call's, later): the pass logs count them from then. total
// is the resource's pass count with them, claimed by the caller (Entry)
// when feeds read it. unflown passes are not in flight from now on: they
// never entered it (Resource.Tally) or were in it as a reservation
// (window.Tally.ReserveInFlight) that their pass takes the place of.
func (r *Resource) recordPass(nowMs, markMs, count, total int64, unflown, shadowBlocked bool, feeds []*window.PassLog) {
	if r.second.Open(nowMs) {
		r.sampleInFlight(nowMs)
	}
	if len(feeds) == 0 {
		// Otherwise Entry claimed them on r.passes, which second counts
		// too (window.Tally.Claimed).
		r.second.Add(window.Pass, count)
	}
	if unflown {
		r.second.AddInFlight(-count)
	}
	if shadowBlocked {
		r.second.Add(window.ShadowBlock, count)
	}
	if r.second.Stripes() == nil {
		// Contended, the calls in flight are a sum over the lines, read
		// once a span instead (sampleInFlight).
		r.second.Extremes(nowMs).ObserveConcurrency(r.second.InFlight())
	}
	if len(feeds) > 0 {
		// Read after the claim: no earlier than the marks of the blocks
		// of numbers claimed before it (window.Tally.AheadMs).
		markMs = max(markMs, r.second.AheadMs())
	}
	for _, log := range feeds {
		log.Mark(markMs, total)
	}
}

// recordBlock records count calls blk blocked at nowMs (nil: refused
// outside the engine), in the resource's statistics first and then in the
// rule's tally, which CollectMinutes reads first: a collection never
// finds more of a minute's blocks in the rules' tallies than in the
// resource's.
func (r *Resource) recordBlock(nowMs, count int64, blk *BlockError) {
	if r.second.Open(nowMs) {
		r.sampleInFlight(nowMs)
	}
	r.second.Add(window.Block, count)
	if blk != nil && blk.tally != nil {
		blk.tally.add(nowMs, count)
	}
}

// recordComplete records count calls completed at nowMs in rtMs each,
// errors of them, as left calls leave flight.
func (r *Resource) recordComplete(nowMs, count, rtMs, errors, left int64) {
	rtMs = max(rtMs, 0)
	if r.second.Open(nowMs) {
		r.sampleInFlight(nowMs)
	}
	r.second.AddComplete(count, rtMs, errors, left)
	r.second.Extremes(nowMs).ObserveRt(rtMs)
}
