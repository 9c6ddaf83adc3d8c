package window

import "testing"

// TestMaxAndMinRtOverTheWindow: Max is the fullest bucket of the last
// interval and MinRt the least response time in it; buckets that left the
// interval count for neither.
func TestMaxAndMinRtOverTheWindow(t *testing.T) {
	la := newWindow(t, 10, 1000)
	la.KeepExtremes()
	if _, ok := la.MinRt(0); ok {
		t.Fatal("a minimum response time before any call completed")
	}
	record := func(nowMs, n, rtMs int64) {
		b, x := la.CurrentExtremes(nowMs)
		b.AddComplete(n, rtMs, 0)
		x.ObserveRt(rtMs)
	}
	record(1000, 7, 5)
	record(1250, 3, 40)
	record(1260, 1, 30)
	steps := []struct {
		nowMs, max, minRt int64
		ok                bool
	}{
		{1300, 7, 5, true},
		{1999, 7, 5, true},
		{2000, 4, 30, true},
		{2300, 0, 0, false},
	}
	for _, s := range steps {
		if got := la.Max(s.nowMs, Complete); got != s.max {
			t.Errorf("at %d: max %d, want %d", s.nowMs, got, s.max)
		}
		minRt, ok := la.MinRt(s.nowMs)
		if ok != s.ok || ok && minRt != s.minRt {
			t.Errorf("at %d: min rt %d, %v; want %d, %v", s.nowMs, minRt, ok, s.minRt, s.ok)
		}
	}
	if _, ok := newWindow(t, 10, 1000).MinRt(0); ok {
		t.Fatal("a window without extremes has a minimum response time")
	}
}
