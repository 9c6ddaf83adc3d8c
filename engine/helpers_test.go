package engine

import (
	"slices"
	"testing"
)

// newTestEngine returns an engine on a manual clock at startMs with rules
// loaded.
func newTestEngine(t testing.TB, startMs int64, rules ...FlowRule) (*Engine, *ManualClock) {
	t.Helper()
	clock := NewManualClock(startMs)
	e := New(Options{Clock: clock})
	t.Cleanup(e.Close)
	if err := e.LoadFlowRules(rules); err != nil {
		t.Fatal(err)
	}
	return e, clock
}

// tryPass calls Entry once and exits at once; it reports whether it passed.
func tryPass(r *Resource, opts ...EntryOption) bool {
	e, blk := r.Entry(opts...)
	if blk != nil {
		return false
	}
	e.Exit()
	return true
}

// maxInAnyWindow returns the most timestamps (sorted or not) that fall in
// any window [t, t+windowMs).
func maxInAnyWindow(times []int64, windowMs int64) int {
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	best, lo := 0, 0
	for hi, t := range sorted {
		for sorted[lo] <= t-windowMs {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}
