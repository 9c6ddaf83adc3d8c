package store

import (
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// TestBlocksByRule: the blocks per rule and reason of the server's flushes
// and of an instance's reports (a retried one counted once) add up per
// minute, in every step's points, and MinuteBlocks gives a minute's;
// pruning drops them with their minutes and sums the rollup that holds
// the cut again.
func TestBlocksByRule(t *testing.T) {
	s, _ := openTestStore(t)
	flow := func(n int64) engine.RuleBlocks {
		return engine.RuleBlocks{Reason: engine.ReasonFlow, Rule: "r1", Blocked: n}
	}
	hot := func(n int64) engine.RuleBlocks {
		return engine.RuleBlocks{Reason: engine.ReasonHotspot, Rule: "per-user", Blocked: n}
	}
	blocked := func(n int64) engine.Counts { return engine.Counts{Calls: engine.Calls{Block: n}} }
	addMetrics(t, s,
		MinuteDelta{Resource: "orders", StartMs: minute(1), Counts: blocked(5), BlockedBy: []engine.RuleBlocks{flow(3), hot(2)}},
		MinuteDelta{Resource: "orders", StartMs: minute(61), Counts: blocked(1), BlockedBy: []engine.RuleBlocks{flow(1)}},
	)
	addMetrics(t, s, MinuteDelta{Resource: "orders", StartMs: minute(1), Counts: blocked(1), BlockedBy: []engine.RuleBlocks{flow(1)}})
	id := putInstance(t, s, "i-1", minute(1))
	report := []MinuteDelta{{Resource: "orders", StartMs: minute(2), Counts: blocked(4), BlockedBy: []engine.RuleBlocks{hot(4)}}}
	for range 2 { // the second is a retry
		if _, err := s.AddInstanceMinutes(t.Context(), id, report, 0); err != nil {
			t.Fatal(err)
		}
	}

	points := func(stepMs int64) []MetricPoint {
		t.Helper()
		got, err := s.ResourceMetrics(t.Context(), "orders", minute(0), minute(120), stepMs)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	byStep := func(points []MetricPoint) map[int64][]engine.RuleBlocks {
		out := map[int64][]engine.RuleBlocks{}
		for _, p := range points {
			out[p.StartMs] = p.BlockedBy
			var sum int64
			for _, b := range p.BlockedBy {
				sum += b.Blocked
			}
			if sum != p.Block {
				t.Errorf("point at %d: blocks by rule sum to %d, block is %d", p.StartMs, sum, p.Block)
			}
		}
		return out
	}
	wantMinutes := map[int64][]engine.RuleBlocks{minute(1): {flow(4), hot(2)}, minute(2): {hot(4)}, minute(61): {flow(1)}}
	if got := byStep(points(MinuteMs)); !reflect.DeepEqual(got, wantMinutes) {
		t.Errorf("minutes' blocks = %v, want %v", got, wantMinutes)
	}
	for _, stepMs := range []int64{FiveMinutesMs, 15 * MinuteMs, HourMs} {
		want := map[int64][]engine.RuleBlocks{minute(0): {flow(4), hot(6)}, minute(60): {flow(1)}}
		if got := byStep(points(stepMs)); !reflect.DeepEqual(got, want) {
			t.Errorf("step %d ms: blocks = %v, want %v", stepMs, got, want)
		}
	}
	day := floorTo(t0, DayMs)
	if got, want := byStep(points(DayMs)), map[int64][]engine.RuleBlocks{day: {flow(5), hot(6)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("day's blocks = %v, want %v", got, want)
	}
	minuteBlocks, err := s.MinuteBlocks(t.Context(), minute(1), []string{"orders", "other"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string][]engine.RuleBlocks{"orders": {flow(4), hot(2)}}; !reflect.DeepEqual(minuteBlocks, want) {
		t.Errorf("MinuteBlocks = %v, want %v", minuteBlocks, want)
	}

	// Cut at the second hour: the first hour's blocks go, the day keeps
	// the second's.
	if _, err := s.PruneMetrics(t.Context(), minute(60), 2); err != nil {
		t.Fatal(err)
	}
	if got, want := byStep(points(MinuteMs)), map[int64][]engine.RuleBlocks{minute(61): {flow(1)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("minutes' blocks after pruning = %v, want %v", got, want)
	}
	if got, want := byStep(points(DayMs)), map[int64][]engine.RuleBlocks{day: {flow(1)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("day's blocks after pruning = %v, want %v", got, want)
	}
}

// TestAddMetricsRepeatedKeys: a flush that names a minute twice, with
// blocks of the same rule in both, adds both, as a flush of distinct
// minutes does (PostgreSQL writes the one row by row, the other as
// many-row lists, which refuse a key twice).
func TestAddMetricsRepeatedKeys(t *testing.T) {
	s, _ := openTestStore(t)
	flow := func(n int64) engine.RuleBlocks {
		return engine.RuleBlocks{Reason: engine.ReasonFlow, Rule: "r1", Blocked: n}
	}
	blocked := func(n int64) engine.Counts { return engine.Counts{Calls: engine.Calls{Pass: 1, Block: n}} }
	addMetrics(t, s,
		MinuteDelta{Resource: "orders", StartMs: minute(1), Counts: blocked(2), BlockedBy: []engine.RuleBlocks{flow(2)}},
		MinuteDelta{Resource: "orders", StartMs: minute(1), Counts: blocked(3), BlockedBy: []engine.RuleBlocks{flow(3)}},
	)
	addMetrics(t, s,
		MinuteDelta{Resource: "orders", StartMs: minute(2), Counts: blocked(1), BlockedBy: []engine.RuleBlocks{flow(1)}},
		MinuteDelta{Resource: "orders", StartMs: minute(3), Counts: blocked(4), BlockedBy: []engine.RuleBlocks{flow(4)}},
	)
	for _, stepMs := range []int64{MinuteMs, HourMs} {
		got, err := s.ResourceMetrics(t.Context(), "orders", minute(0), minute(60), stepMs)
		if err != nil {
			t.Fatal(err)
		}
		var pass, block, byRule int64
		for _, p := range got {
			pass, block = pass+p.Pass, block+p.Block
			for _, b := range p.BlockedBy {
				byRule += b.Blocked
			}
		}
		if pass != 4 || block != 10 || byRule != 10 {
			t.Errorf("step %d ms: pass %d, block %d, blocked by r1 %d; want 4, 10, 10", stepMs, pass, block, byRule)
		}
	}
}
