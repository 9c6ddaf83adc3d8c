package engine

import (
	"math"
	"sync/atomic"
)

// warmUp is Guava's SmoothWarmingUp as Sentinel applies it, in units of the
// rule's interval: tokens pile up while the resource is idle (up to
// maxToken), and while more than warningToken are stored the allowed rate
// lies on a line from threshold/coldFactor (bucket full) up to threshold
// (warningToken left). Passes drain the tokens, so a busy resource ramps up
// over warmUpPeriodSec; an idle one cools down again.
type warmUp struct {
	threshold    float64
	coldFactor   float64
	intervalMs   int64
	warningToken int64
	maxToken     int64
	slope        float64
	passes       *atomic.Int64 // the measured resource's: what drains the tokens

	storedTokens atomic.Int64
	lastFilledMs atomic.Int64
	// passesAtFill is passes' total when the tokens were last filled.
	passesAtFill atomic.Int64
}

func newWarmUp(rule FlowRule, nowMs int64, passes *atomic.Int64) *warmUp {
	periods := float64(rule.WarmUpPeriodSec*1000) / float64(rule.StatIntervalMs)
	cold := float64(rule.WarmUpColdFactor)
	w := &warmUp{threshold: rule.Threshold, coldFactor: cold, intervalMs: rule.StatIntervalMs, passes: passes}
	warning := periods * rule.Threshold / (cold - 1)
	maxToken := warning + 2*periods*rule.Threshold/(1+cold)
	w.warningToken = int64(warning)
	w.maxToken = int64(maxToken)
	if w.maxToken > w.warningToken {
		w.slope = (cold - 1) / rule.Threshold / float64(w.maxToken-w.warningToken)
	}
	// A new rule starts cold, as after a long idle.
	w.storedTokens.Store(w.maxToken)
	w.lastFilledMs.Store(nowMs - nowMs%w.intervalMs)
	w.passesAtFill.Store(passes.Load())
	return w
}

// allowed returns the number of passes allowed per interval at nowMs.
func (w *warmUp) allowed(nowMs int64) float64 {
	if w.threshold <= 0 {
		return 0
	}
	w.sync(nowMs)
	rest := w.storedTokens.Load()
	if rest < w.warningToken {
		return w.threshold
	}
	above := float64(rest - w.warningToken)
	return math.Nextafter(1/(above*w.slope+1/w.threshold), math.MaxFloat64)
}

// sync refills the tokens for the intervals elapsed since the last refill
// and takes out those the last whole interval's passes used; the first
// caller of an interval does it. The passes since the last refill are the
// last interval's when that refill was at its start, and there were none
// when a whole interval went by without a call through the rule, since a
// pass comes after its check (an associated rule's referenced resource may
// have had some, which Sentinel would count).
func (w *warmUp) sync(nowMs int64) {
	current := nowMs - nowMs%w.intervalMs
	last := w.lastFilledMs.Load()
	if current <= last || !w.lastFilledMs.CompareAndSwap(last, current) {
		return
	}
	total := w.passes.Load()
	passed := total - w.passesAtFill.Swap(total)
	if current-last > w.intervalMs {
		passed = 0
	}
	for {
		old := w.storedTokens.Load()
		tokens := old
		if old < w.warningToken || (old > w.warningToken && float64(passed) < w.threshold/w.coldFactor) {
			refill := float64(current-last) * w.threshold / float64(w.intervalMs)
			tokens = int64(math.Min(float64(old)+refill, float64(w.maxToken)))
		}
		tokens = min(tokens, w.maxToken) - passed
		if w.storedTokens.CompareAndSwap(old, max(tokens, 0)) {
			return
		}
	}
}
