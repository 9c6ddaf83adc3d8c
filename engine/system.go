package engine

import (
	"sync/atomic"

	"github.com/sluicehq/sluice/engine/window"
)

// systemGuard is the engine's system rules and what they read: the
// inbound calls' statistics and the process's sampled figures. Neither
// exists, and no goroutine runs, until a system rule is loaded.
type systemGuard struct {
	// rules is nil while no system rule applies: an inbound call then
	// pays one load for them.
	rules atomic.Pointer[systemRules]
	files procFiles

	// stats is made by the first load, under Engine.loadMu, and kept ever
	// after: it is set before any call could count in it (it does so
	// through a published set), so an Exit reads it without the lock.
	stats *inboundStats

	// Guarded by Engine.loadMu.
	loaded  []SystemRule // as loaded, defaults filled in
	sampler *sampler     // made by the first load that needs it
	closed  bool         // the engine is closed: no sampler starts
}

// systemRules is a published set of system rules.
type systemRules struct {
	checkers []*systemChecker
	stats    *inboundStats
	sampler  *sampler // nil if no rule watches a sampled figure
	// expiresAtMs is when the first of the rules expires (noExpiry if
	// none does).
	expiresAtMs int64
}

// systemChecker is a loaded system rule.
type systemChecker struct {
	rule    SystemRule
	blocked *BlockError
	shadow  bool
	bbr     bool
}

// inboundStats is the engine's statistics of its inbound calls: a
// one-second window of ten buckets (passes, completions, response times,
// the least of them) and the calls in flight.
type inboundStats struct {
	concurrency atomic.Int64
	second      window.LeapArray
}

func newInboundStats() *inboundStats {
	s := &inboundStats{}
	mustInit(&s.second, secondSamples, secondIntervalMs, nil)
	s.second.KeepExtremes()
	return s
}

// pass counts count inbound calls let through at nowMs.
func (s *inboundStats) pass(nowMs, count int64) {
	s.second.Current(nowMs).Add(window.Pass, count)
	s.concurrency.Add(count)
}

// complete ends count inbound calls, complete of them completed in rtMs
// each.
func (s *inboundStats) complete(nowMs, count, complete, rtMs, errors int64) {
	s.concurrency.Add(-count)
	b, x := s.second.CurrentExtremes(nowMs)
	b.AddComplete(complete, rtMs, errors)
	x.ObserveRt(rtMs)
}

// bbrAdmits is Sentinel's BBR check: the calls in flight are at most one,
// or at most the most completions per second times the least response
// time, in seconds, over the last second.
func (s *inboundStats) bbrAdmits(nowMs int64) bool {
	inFlight := s.concurrency.Load()
	if inFlight <= 1 {
		return true
	}
	minRt, ok := s.second.MinRt(nowMs)
	if !ok {
		return false
	}
	perSecond := float64(s.second.Max(nowMs, window.Complete)) * 1000 / float64(s.second.BucketLenMs())
	return float64(inFlight) <= perSecond*float64(max(minRt, 1))/1000
}

// check runs the rules on an inbound call of count at nowMs and returns
// whether a shadow rule would have blocked it, or the block.
func (s *systemRules) check(nowMs, count int64) (shadowBlocked bool, blk *BlockError) {
	for _, c := range s.checkers {
		switch {
		case c.admits(s, nowMs, count):
		case c.shadow:
			shadowBlocked = true
		default:
			return false, c.blocked
		}
	}
	return shadowBlocked, nil
}

// admits reports whether the rule lets an inbound call of count through.
func (c *systemChecker) admits(s *systemRules, nowMs, count int64) bool {
	trigger := c.rule.TriggerCount
	switch c.rule.MetricType {
	case SystemInboundQPS:
		passes := s.stats.second.Sum(nowMs, window.Pass) * 1000 / secondIntervalMs
		return float64(passes+count) <= trigger
	case SystemConcurrency:
		return float64(s.stats.concurrency.Load()+count) <= trigger
	case SystemAvgRt:
		sums := s.stats.second.SumAll(nowMs)
		return sums[window.Complete] == 0 || float64(sums[window.RtSum]) <= trigger*float64(sums[window.Complete])
	case SystemLoad:
		return s.sampler.loadAvg() <= trigger || c.bbr && s.stats.bbrAdmits(nowMs)
	default:
		return s.sampler.cpu() <= trigger || c.bbr && s.stats.bbrAdmits(nowMs)
	}
}

// LoadSystemRules replaces every system rule with rules, as LoadFlowRules
// does for flow rules: validated first (a *ValidationError names every bad
// field as "rules[i].field"), then swapped in with one atomic store. The
// inbound statistics are kept. While a rule watches load or cpuUsage, the
// engine reads them once a second in the background; with none, nothing
// runs.
func (e *Engine) LoadSystemRules(rules []SystemRule) error {
	loaded, err := validateSet(SystemKind, "rules", rules, nil)
	if err != nil {
		return err
	}
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.commitSystem(loaded)
	return nil
}

// ValidateSystemRules checks rules as LoadSystemRules would, without
// loading them.
func ValidateSystemRules(rules []SystemRule) error {
	_, err := validateSet(SystemKind, "rules", rules, nil)
	return err
}

// SystemRules returns the loaded system rules, defaults filled in, in the
// order they were loaded.
func (e *Engine) SystemRules() []SystemRule {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	var rules []SystemRule
	return append(rules, e.system.loaded...)
}

// commitSystem publishes rules, valid and with their defaults, as the
// engine's system rules, and starts or stops the sampler as they need it.
// The caller holds loadMu.
func (e *Engine) commitSystem(rules []SystemRule) {
	g := &e.system
	g.loaded = rules
	sampled := false
	for _, r := range rules {
		sampled = sampled || r.MetricType.sampled()
	}
	if len(rules) > 0 && g.stats == nil {
		g.stats = newInboundStats()
	}
	if sampled && g.sampler == nil {
		g.sampler = &sampler{files: g.files, clock: e.clock}
	}
	switch {
	case sampled && !g.closed:
		g.sampler.start()
	case g.sampler != nil:
		g.sampler.stopSampling()
	}
	g.rules.Store(g.activeAt(e.clock.NowMs()))
}

// activeAt returns the published set of the loaded rules that apply at
// nowMs, nil if none does. The caller holds loadMu.
func (g *systemGuard) activeAt(nowMs int64) *systemRules {
	s := &systemRules{stats: g.stats, expiresAtMs: noExpiry}
	for _, r := range g.loaded {
		if r.ExpiresAtMs != 0 && r.ExpiresAtMs <= nowMs {
			continue
		}
		if r.ExpiresAtMs != 0 {
			s.expiresAtMs = min(s.expiresAtMs, r.ExpiresAtMs)
		}
		if r.MetricType.sampled() {
			s.sampler = g.sampler
		}
		s.checkers = append(s.checkers, &systemChecker{rule: r,
			blocked: &BlockError{reason: ReasonSystem, rule: r.Name},
			shadow:  r.Mode == ModeShadow, bbr: r.Strategy == SystemBBR})
	}
	if len(s.checkers) == 0 {
		return nil
	}
	return s
}

// checkInbound runs the system rules on an inbound call of count at
// nowMs. It returns the statistics the call is to be counted in if it
// passes (nil when no rule applies), whether a shadow rule would have
// blocked it, or the block.
func (e *Engine) checkInbound(nowMs, count int64) (*inboundStats, bool, *BlockError) {
	s := e.system.rules.Load()
	if s == nil {
		return nil, false, nil
	}
	if nowMs >= s.expiresAtMs {
		if s = e.expireSystemRules(nowMs); s == nil {
			return nil, false, nil
		}
	}
	shadowBlocked, blk := s.check(nowMs, count)
	return s.stats, shadowBlocked, blk
}

// expireSystemRules publishes the system rules without those expired at
// nowMs and returns them: once, by the first call that finds one expired.
func (e *Engine) expireSystemRules(nowMs int64) *systemRules {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	s := e.system.rules.Load()
	if s == nil || nowMs < s.expiresAtMs {
		return s
	}
	s = e.system.activeAt(nowMs)
	e.system.rules.Store(s)
	return s
}

// closeSystem stops the sampler for good.
func (e *Engine) closeSystem() {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.system.closed = true
	if e.system.sampler != nil {
		e.system.sampler.stopSampling()
	}
}
