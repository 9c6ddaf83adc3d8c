package store

import (
	"slices"
	"testing"
)

// TestHeartbeats: a minute recorded twice (two replicas, or a restart in
// the same minute) is one heartbeat; the covered steps of a range are
// those with any minute recorded, step-aligned; pruning goes by minute, in
// batches.
func TestHeartbeats(t *testing.T) {
	st, _ := openTestStore(t)
	ctx := t.Context()
	for _, minutes := range [][]int64{{0, MinuteMs + 30_000, 2 * MinuteMs}, {2 * MinuteMs, 7 * MinuteMs, HourMs}} {
		if err := st.AddHeartbeats(ctx, minutes); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		fromMs, toMs, stepMs int64
		want                 []int64
	}{
		{0, HourMs, MinuteMs, []int64{0, MinuteMs, 2 * MinuteMs, 7 * MinuteMs}},
		{MinuteMs, 3 * MinuteMs, MinuteMs, []int64{MinuteMs, 2 * MinuteMs}},
		{0, 2 * HourMs, FiveMinutesMs, []int64{0, FiveMinutesMs, HourMs}},
		{0, DayMs, DayMs, []int64{0}},
		{3 * MinuteMs, 7 * MinuteMs, MinuteMs, nil},
	} {
		got, err := st.CoveredSteps(ctx, tc.fromMs, tc.toMs, tc.stepMs)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("CoveredSteps(%d, %d, %d) = %v (%v), want %v", tc.fromMs, tc.toMs, tc.stepMs, got, err, tc.want)
		}
	}
	deleted, err := st.PruneHeartbeats(ctx, 7*MinuteMs, 2)
	if err != nil || deleted != 3 {
		t.Fatalf("PruneHeartbeats deleted %d (%v), want 3", deleted, err)
	}
	if got, err := st.CoveredSteps(ctx, 0, DayMs, MinuteMs); err != nil || !slices.Equal(got, []int64{7 * MinuteMs, HourMs}) {
		t.Errorf("after pruning: %v (%v), want minute 7 and the hour", got, err)
	}
}
