package e2e

import (
	"net/url"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// TestHistoryDrawsOutagesAsGaps opens the last hour of a resource whose
// server was up from 70 to 40 minutes ago and from 20 minutes ago on, with
// calls at 50 and 10 minutes ago: the chart draws the 20 minutes no server
// was up as a gap (null) and says so under it, and the idle minutes in
// which one was up as 0.
func TestHistoryDrawsOutagesAsGaps(t *testing.T) {
	t.Parallel()
	const resource = "e2e:outage"
	n := startNode(t, nodeConfig{seed: func(t *testing.T, st *store.Store) {
		now := time.Now().Truncate(time.Minute).UnixMilli()
		ago := func(minutes int64) int64 { return now - minutes*store.MinuteMs }
		var beats []int64
		for m := ago(70); m <= now; m += store.MinuteMs {
			if m < ago(40) || m >= ago(20) {
				beats = append(beats, m)
			}
		}
		if err := st.AddHeartbeats(t.Context(), beats); err != nil {
			t.Fatal(err)
		}
		var rows []store.MinuteDelta
		for _, m := range []int64{ago(50), ago(10)} {
			rows = append(rows, store.MinuteDelta{Resource: resource, StartMs: m, Counts: engine.Counts{Calls: engine.Calls{Pass: 30}}})
		}
		if err := st.AddMetrics(t.Context(), rows); err != nil {
			t.Fatal(err)
		}
	}})
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/resources/"+url.PathEscape(resource)+"?range=1h", resource)
	tb.waitFor("the stored minutes on the chart", `document.querySelector('#history-chart')?.dataset.traffic === '2'`)
	tb.waitFor("20 minutes unknown", `document.querySelector('#history-chart').dataset.unknown === '20'`)
	// One gap for the outage, one for the minute under way, not yet written.
	tb.waitFor("the outage and the minute under way as gaps", `document.querySelector('#history-chart').dataset.gaps === '2'`)
	tb.waitText("#history-key", "A gap in the lines: no Sluice server was up (20 steps of this range)")
	tb.waitText("#history-key", "0: a server was up and the resource had no calls")
}
