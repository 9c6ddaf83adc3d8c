package engine

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/engine/window"
)

// BreakerState is the state of a circuit breaker.
type BreakerState string

// Circuit breaker states.
const (
	// BreakerClosed lets calls through and watches their outcome.
	BreakerClosed BreakerState = "closed"
	// BreakerOpen blocks every call until retryTimeoutMs has passed.
	BreakerOpen BreakerState = "open"
	// BreakerHalfOpen lets probeNum probes through and blocks the rest
	// until they complete: all succeed and it closes, one fails and it
	// opens again.
	BreakerHalfOpen BreakerState = "halfOpen"
)

// ReasonCircuitBreaker is an open (or half-open) circuit breaker.
const ReasonCircuitBreaker BlockReason = "circuitBreaker"

// BreakerStateChange is one transition of a circuit breaker.
type BreakerStateChange struct {
	Rule     string
	Resource string
	From, To BreakerState
	AtMs     int64
}

// BreakerStatus is a circuit breaker's state and its window's figures.
type BreakerStatus struct {
	Rule     string
	Resource string
	Strategy BreakerStrategy
	State    BreakerState
	// SinceMs is when the breaker entered State.
	SinceMs int64
	// Total, Errors and Slow count the calls completed in the breaker's
	// window (statIntervalMs): all, failed, and slower than
	// maxAllowedRtMs (slowRequestRatio only).
	Total, Errors, Slow int64
}

// A breaker's window counts completed calls only; these are the bucket
// counters it uses for them.
const (
	breakerTotal  = window.Complete
	breakerErrors = window.Error
	breakerSlow   = window.Pass
)

const (
	stateClosed int32 = iota
	stateOpen
	stateHalfOpen
)

var stateNames = [...]BreakerState{stateClosed: BreakerClosed, stateOpen: BreakerOpen, stateHalfOpen: BreakerHalfOpen}

// breaker is a loaded circuit breaker rule. The common case, closed, costs
// one atomic load on Entry; transitions and half-open's probe counting take
// a lock, which only a tripped breaker's traffic ever meets.
type breaker struct {
	rule     CircuitBreakerRule
	owner    *Resource
	blocked  *BlockError
	shadow   bool
	onChange func(BreakerStateChange)

	state     atomic.Int32
	retryAtMs atomic.Int64 // open: when the first probe may go
	win       atomic.Pointer[window.LeapArray]
	// lastFailureMs: while it is a whole interval old, the window holds no
	// failure and a success cannot trip the breaker, so it is not checked.
	lastFailureMs atomic.Int64

	mu sync.Mutex
	// Guarded by mu.
	sinceMs        int64
	probesLeft     int64 // half-open: probes still to let through
	probesReported int64 // half-open: probes that succeeded
}

func newBreaker(rule CircuitBreakerRule, owner *Resource, nowMs int64, onChange func(BreakerStateChange)) *breaker {
	b := &breaker{
		rule:     rule,
		owner:    owner,
		blocked:  newBlockError(ReasonCircuitBreaker, rule.Name),
		shadow:   rule.Mode == ModeShadow,
		onChange: onChange,
		sinceMs:  nowMs,
	}
	b.win.Store(b.newWindow())
	b.lastFailureMs.Store(math.MinInt64 / 2)
	return b
}

func (b *breaker) newWindow() *window.LeapArray {
	la := &window.LeapArray{}
	mustInit(la, sampleCountFor(b.rule.StatIntervalMs), b.rule.StatIntervalMs, nil)
	return la
}

// sampleCountFor picks the most buckets, up to 10, that divide intervalMs
// evenly.
func sampleCountFor(intervalMs int64) int {
	for n := int64(secondSamples); n > 1; n-- {
		if intervalMs%n == 0 {
			return int(n)
		}
	}
	return 1
}

// tryPass says whether a call may pass at nowMs, and whether it does so as
// one of half-open's probes.
func (b *breaker) tryPass(nowMs int64) (ok, probe bool) {
	switch b.state.Load() {
	case stateClosed:
		return true, false
	case stateOpen:
		if nowMs < b.retryAtMs.Load() {
			return false, false
		}
	}
	b.mu.Lock()
	var change *BreakerStateChange
	switch b.state.Load() {
	case stateClosed:
		ok = true
	case stateOpen:
		if nowMs < b.retryAtMs.Load() {
			break
		}
		change = b.moveLocked(stateHalfOpen, nowMs)
		b.probesLeft, b.probesReported = b.rule.ProbeNum, 0
		fallthrough
	case stateHalfOpen:
		if b.probesLeft > 0 {
			b.probesLeft--
			ok, probe = true, true
		}
	}
	b.mu.Unlock()
	b.notify(change)
	return ok, probe
}

// cancelProbe gives back a probe slot whose call did not go ahead.
func (b *breaker) cancelProbe() {
	b.mu.Lock()
	if b.state.Load() == stateHalfOpen {
		b.probesLeft++
	}
	b.mu.Unlock()
}

// onComplete records count calls that completed at nowMs in rtMs each
// (failed: with an error) and moves the breaker as their outcome says.
// probe is set for calls half-open let through as probes.
func (b *breaker) onComplete(nowMs, count, rtMs int64, failed, probe bool) {
	slow := b.rule.Strategy == StrategySlowRequestRatio && rtMs > b.rule.MaxAllowedRtMs
	win := b.win.Load()
	bucket := win.Current(nowMs)
	bucket.Add(breakerTotal, count)
	if failed {
		bucket.Add(breakerErrors, count)
	}
	if slow {
		bucket.Add(breakerSlow, count)
	}
	failure := failed
	if b.rule.Strategy == StrategySlowRequestRatio {
		failure = slow
	}
	if failure {
		b.lastFailureMs.Store(nowMs)
	}
	switch b.state.Load() {
	case stateClosed:
		if b.lastFailureMs.Load() > nowMs-b.rule.StatIntervalMs && b.tripped(win, nowMs) {
			b.transition(stateClosed, stateOpen, nowMs)
		}
	case stateHalfOpen:
		if probe {
			b.reportProbe(failure, nowMs)
		}
	}
}

// tripped says whether the window's figures cross the threshold.
func (b *breaker) tripped(win *window.LeapArray, nowMs int64) bool {
	sums := win.SumAll(nowMs)
	total := sums[breakerTotal]
	if total < b.rule.MinRequestAmount {
		return false
	}
	switch b.rule.Strategy {
	case StrategyErrorCount:
		return float64(sums[breakerErrors]) >= b.rule.Threshold
	case StrategyErrorRatio:
		return float64(sums[breakerErrors])/float64(total) > b.rule.Threshold
	default:
		return float64(sums[breakerSlow])/float64(total) > b.rule.Threshold
	}
}

func (b *breaker) reportProbe(failure bool, nowMs int64) {
	b.mu.Lock()
	var change *BreakerStateChange
	if b.state.Load() == stateHalfOpen {
		if failure {
			change = b.moveLocked(stateOpen, nowMs)
		} else if b.probesReported++; b.probesReported >= b.rule.ProbeNum {
			change = b.moveLocked(stateClosed, nowMs)
		}
	}
	b.mu.Unlock()
	b.notify(change)
}

// transition moves the breaker from one state to another unless another
// caller moved it first.
func (b *breaker) transition(from, to int32, nowMs int64) {
	b.mu.Lock()
	var change *BreakerStateChange
	if b.state.Load() == from {
		change = b.moveLocked(to, nowMs)
	}
	b.mu.Unlock()
	b.notify(change)
}

// moveLocked enters state to at nowMs; the caller holds mu. Opening sets
// the retry time; closing starts a fresh window, so the failures that
// opened the breaker do not open it again.
func (b *breaker) moveLocked(to int32, nowMs int64) *BreakerStateChange {
	from := b.state.Load()
	switch to {
	case stateOpen:
		b.retryAtMs.Store(nowMs + b.rule.RetryTimeoutMs)
	case stateClosed:
		b.win.Store(b.newWindow())
	}
	b.state.Store(to)
	b.sinceMs = nowMs
	return &BreakerStateChange{
		Rule: b.rule.Name, Resource: b.rule.Resource,
		From: stateNames[from], To: stateNames[to], AtMs: nowMs,
	}
}

func (b *breaker) notify(change *BreakerStateChange) {
	if change != nil && b.onChange != nil {
		b.onChange(*change)
	}
}

func (b *breaker) status(nowMs int64) BreakerStatus {
	b.mu.Lock()
	state, since := stateNames[b.state.Load()], b.sinceMs
	b.mu.Unlock()
	sums := b.win.Load().SumAll(nowMs)
	return BreakerStatus{
		Rule: b.rule.Name, Resource: b.rule.Resource, Strategy: b.rule.Strategy,
		State: state, SinceMs: since,
		Total: sums[breakerTotal], Errors: sums[breakerErrors], Slow: sums[breakerSlow],
	}
}
