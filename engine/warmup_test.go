package engine

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
)

func warmUpRule() FlowRule {
	return FlowRule{
		Name: "ramp", Resource: "orders", Threshold: 100,
		TokenCalculateStrategy: StrategyWarmUp, WarmUpPeriodSec: 10, WarmUpColdFactor: 3,
	}
}

// TestWarmUpFormula checks the allowed rate against Guava's and Sentinel's
// formula at a few points of the token bucket.
func TestWarmUpFormula(t *testing.T) {
	rule := warmUpRule().WithDefaults()
	w := newWarmUp(rule, 0, &atomic.Int64{})
	// threshold 100/s, cold factor 3, 10 s: warning = 10*100/2 = 500,
	// max = 500 + 2*10*100/4 = 1000, slope = 2/100/500.
	if w.warningToken != 500 || w.maxToken != 1000 || math.Abs(w.slope-0.00004) > 1e-12 {
		t.Fatalf("warning %d max %d slope %g, want 500, 1000, 4e-5", w.warningToken, w.maxToken, w.slope)
	}
	tests := []struct {
		tokens int64
		want   float64
	}{
		{1000, 100.0 / 3},                  // full: threshold / coldFactor
		{750, 1 / (250*0.00004 + 1.0/100)}, // half way up the slope: 50
		{500, 100},                         // at the warning line: threshold
		{100, 100},                         // below it: threshold
	}
	for _, tt := range tests {
		w.storedTokens.Store(tt.tokens)
		got := w.allowed(0) // time 0: no refill, the tokens stay as set
		if math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("tokens %d: allowed %.6f, want %.6f", tt.tokens, got, tt.want)
		}
	}
}

// TestWarmUpCurve hammers a cold warm-up rule and checks the passes of each
// second: threshold/coldFactor first, rising, threshold once the warm-up
// period is over; and cold again after a long idle.
func TestWarmUpCurve(t *testing.T) {
	e, clock := newTestEngine(t, 0, warmUpRule())
	r := e.Resource("orders")
	hammer := func(fromMs int64, seconds int) []int {
		perSecond := make([]int, seconds)
		for ms := fromMs; ms < fromMs+int64(seconds)*1000; ms++ {
			clock.Set(ms)
			for range 2 {
				if tryPass(r) {
					perSecond[(ms-fromMs)/1000]++
				}
			}
		}
		return perSecond
	}
	curve := hammer(0, 14)
	t.Logf("passes per second: %v", curve)
	if curve[0] != 33 {
		t.Errorf("first second: %d passes, want 33 (100/3)", curve[0])
	}
	for i := 1; i < 9; i++ {
		if curve[i] < curve[i-1] {
			t.Errorf("second %d: %d passes, fewer than the %d before", i, curve[i], curve[i-1])
		}
	}
	if curve[4] < 40 || curve[4] > 80 {
		t.Errorf("second 4: %d passes, want it between cold and warm", curve[4])
	}
	for i := 11; i < len(curve); i++ {
		if curve[i] < 98 || curve[i] > 100 {
			t.Errorf("second %d (after the 10 s warm-up): %d passes, want 100", i, curve[i])
		}
	}
	// A minute idle refills the bucket: cold again.
	again := hammer(100_000, 1)
	if again[0] != 33 {
		t.Errorf("after a long idle: %d passes, want 33", again[0])
	}
}

// guavaCurve is the passes per second of a warm-up rule of threshold 100,
// cold factor 3 and a 10 s warm-up that is always offered more than it
// allows: Guava's and Sentinel's formula, second after second.
var guavaCurve = []int{33, 34, 36, 38, 41, 44, 47, 52, 58, 68, 83, 100, 100, 100}

// TestWarmUpCurveUnderAnyOverload: hammered or evenly paced, from just over
// the threshold to ten times it, a cold warm-up rule passes what the
// formula allows each second, never less than its cold rate.
func TestWarmUpCurveUnderAnyOverload(t *testing.T) {
	for _, perSecond := range []int64{105, 150, 200, 1000, 0} {
		name := fmt.Sprintf("paced %d per second", perSecond)
		if perSecond == 0 {
			name = "hammered"
		}
		t.Run(name, func(t *testing.T) {
			e, clock := newTestEngine(t, 0, warmUpRule())
			r := e.Resource("orders")
			curve := make([]int, len(guavaCurve))
			call := func(ms int64) {
				clock.Set(ms)
				if tryPass(r) {
					curve[ms/1000]++
				}
			}
			end := int64(len(curve)) * 1000
			if perSecond == 0 {
				for ms := range end {
					call(ms)
					call(ms)
				}
			} else {
				for j := int64(0); j*1000/perSecond < end; j++ {
					call(j * 1000 / perSecond)
				}
			}
			t.Logf("passes per second: %v", curve)
			for i, want := range guavaCurve {
				if d := curve[i] - want; curve[i] < 33 || float64(max(d, -d)) > 0.05*float64(want) {
					t.Errorf("second %d: %d passes, want %d (within 5%%, at least the cold rate 33)", i, curve[i], want)
				}
			}
		})
	}
}

func TestWarmUpWithThrottling(t *testing.T) {
	rule := warmUpRule()
	rule.ControlBehavior = BehaviorThrottling
	rule.MaxQueueingTimeMs = 0
	e, clock := newTestEngine(t, 0, rule)
	r := e.Resource("orders")
	var passes []int64
	for ms := range int64(1000) {
		clock.Set(ms)
		if en, blk := r.Entry(WithNoWait()); blk == nil {
			passes = append(passes, ms)
			en.Exit()
		}
	}
	// Cold: 100/3 per second, evenly spaced 30 ms apart.
	if len(passes) < 33 || len(passes) > 34 {
		t.Fatalf("%d passes in the first cold second, want 33 or 34", len(passes))
	}
	for i := 1; i < len(passes); i++ {
		if gap := passes[i] - passes[i-1]; gap < 29 || gap > 31 {
			t.Fatalf("passes %d ms apart, want 30", gap)
		}
	}
}

// TestWarmUpWithThrottlingWarms: a throttled warm-up hammered for its
// warm-up period warms up: its passes drain its tokens, and it spaces them
// at a rate that rises from cold to its threshold.
func TestWarmUpWithThrottlingWarms(t *testing.T) {
	rule := warmUpRule()
	rule.ControlBehavior = BehaviorThrottling
	e, clock := newTestEngine(t, 0, rule)
	r := e.Resource("orders")
	curve := make([]int, 14)
	for ms := range int64(len(curve)) * 1000 {
		clock.Set(ms)
		if en, blk := r.Entry(WithNoWait()); blk == nil {
			curve[ms/1000]++
			en.Exit()
		}
	}
	t.Logf("passes per second: %v", curve)
	if curve[0] > 34 {
		t.Errorf("first second: %d passes, want 100/3", curve[0])
	}
	for i := 1; i < 11; i++ {
		if curve[i] < curve[i-1] {
			t.Errorf("second %d: %d passes, fewer than the %d before", i, curve[i], curve[i-1])
		}
	}
	for i := 11; i < len(curve); i++ {
		if curve[i] != 100 {
			t.Errorf("second %d (after the 10 s warm-up): %d passes, want 100", i, curve[i])
		}
	}
}

func TestWarmUpThresholdZero(t *testing.T) {
	rule := warmUpRule()
	rule.Threshold = 0
	e, _ := newTestEngine(t, 0, rule)
	if tryPass(e.Resource("orders")) {
		t.Fatal("a warm-up rule with threshold 0 let a call pass")
	}
}
