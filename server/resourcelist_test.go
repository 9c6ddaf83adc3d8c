package server

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/metrics"
	"github.com/sluicehq/sluice/store"
)

// TestResourcesPaging walks every page of GET /resources, over HTTP on a
// real SQLite file, for each filter and order: stored resources (some from
// before a restart), a resource only a rule names, resources seen since
// the last flush and resources with live traffic come each exactly once,
// in order, with the same total on every page.
func TestResourcesPaging(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0 + 30_000)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	var old []store.MinuteDelta
	for i := range 23 {
		name := []string{"GET /Orders/%02d", "get /users/%02d", "pay_%02d"}[i%3]
		old = append(old, store.MinuteDelta{Resource: fmt.Sprintf(name, i), StartMs: metricsT0 - store.HourMs, Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
	}
	if err := n.Store.AddMetrics(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	n.createRule(t, map[string]any{"kind": "flow", "resource": "ruled-only", "threshold": 5})
	n.createRule(t, map[string]any{"kind": "flow", "resource": "blocked", "threshold": 0})
	n.createRule(t, map[string]any{"kind": "flow", "resource": "GET /Orders/03", "threshold": 1})

	type liveCalls struct{ pass, block int }
	live := map[string]liveCalls{}
	call := func(name string, calls int) {
		pass, block := traffic(t, n.engine, name, calls, 0, 1)
		c := live[name]
		live[name] = liveCalls{c.pass + pass, c.block + block}
	}
	call("flushed", 2)
	n.flush(t)
	call("flushed", 1)
	for i, name := range []string{"fresh-a", "Fresh-b", "fresh-c", "get /users/04", "blocked", "GET /Orders/03"} {
		call(name, 1+i%4)
	}
	names := []string{"ruled-only", "flushed", "fresh-a", "Fresh-b", "fresh-c", "blocked"}
	for _, d := range old {
		names = append(names, d.Resource)
	}

	expected := func(q, order string) []string {
		var ranked, rest []string
		for _, name := range names {
			switch {
			case !store.NameContains(name, q):
			case order == string(metrics.ByPassQps) && live[name].pass > 0, order == string(metrics.ByBlockQps) && live[name].block > 0:
				ranked = append(ranked, name)
			default:
				rest = append(rest, name)
			}
		}
		rate := func(name string) int {
			if order == string(metrics.ByBlockQps) {
				return live[name].block
			}
			return live[name].pass
		}
		slices.SortFunc(ranked, func(a, b string) int { return cmp.Or(cmp.Compare(rate(b), rate(a)), strings.Compare(a, b)) })
		slices.Sort(rest)
		return append(ranked, rest...)
	}
	for _, q := range []string{"", "orders", "FRESH", "_", "nothing"} {
		for _, order := range []string{string(metrics.ByName), string(metrics.ByPassQps), string(metrics.ByBlockQps)} {
			t.Run(q+order, func(t *testing.T) {
				want := expected(q, order)
				var got []string
				for page := 1; page <= len(want)/4+2; page++ {
					query := url.Values{"q": {q}, "sort": {order}, "page": {fmt.Sprint(page)}, "pageSize": {"4"}}
					resp, body := n.call(t, http.MethodGet, "/api/v1/resources?"+query.Encode(), nil, nil)
					mustStatus(t, resp, body, http.StatusOK)
					list := decodeStrict[ResourceList](t, body)
					if list.Total != int64(len(want)) || list.Page != page || list.PageSize != 4 || list.Items == nil {
						t.Fatalf("page %d: total %d, page %d, pageSize %d, items %v; want total %d", page, list.Total, list.Page, list.PageSize, list.Items, len(want))
					}
					for _, it := range list.Items {
						got = append(got, it.Name)
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("pages hold\n%q\nwant\n%q", got, want)
				}
			})
		}
	}
}

// TestOverflowListedWithHistory: calls on names a full engine has no room
// for are allowed and counted under (overflow), which is listed, has a
// history and is exposed to Prometheus with the overflow counter.
func TestOverflowListedWithHistory(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil,
		func(o *engine.Options) { o.MaxResources = 2 })
	for _, name := range []string{"a", "b", "c", "d", "e", "e"} {
		resp, body := n.call(t, http.MethodPost, checkPath, `{"resource": "`+name+`"}`, nil)
		mustStatus(t, resp, body, http.StatusOK)
		if string(body) != allowed {
			t.Fatalf("check of %s = %s, want allowed", name, body)
		}
	}
	resp, body := n.call(t, http.MethodGet, "/api/v1/resources", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	var listed []string
	for _, it := range decodeStrict[ResourceList](t, body).Items {
		listed = append(listed, it.Name)
		if it.Name == engine.OverflowResource && it.Live.PassQps != 4 {
			t.Errorf("%s live %+v, want 4 passes", it.Name, it.Live)
		}
	}
	if want := []string{engine.OverflowResource, "a", "b"}; !slices.Equal(listed, want) {
		t.Errorf("listed %q, want %q", listed, want)
	}

	resp, body = n.call(t, http.MethodGet, "/metrics", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	for _, line := range []string{
		"sluice_resource_overflow_total 4\n",
		"sluice_resources_tracked 3\n",
		`sluice_resource_passed_total{resource="(overflow)"} 4` + "\n",
	} {
		if !strings.Contains(string(body), line) {
			t.Errorf("the exposition lacks %q", line)
		}
	}

	n.flush(t)
	got := n.history(t, engine.OverflowResource, rangeQuery(metricsT0, metricsT0+store.HourMs, "1h"))
	if len(got.Points) != 1 || got.Points[0].Pass != 4 {
		t.Errorf("history of %s: %+v, want the 4 passes", engine.OverflowResource, got.Points)
	}
	for _, name := range []string{"c", "e"} {
		resp, body := n.call(t, http.MethodGet, "/api/v1/resources/"+name+"/metrics", nil, nil)
		mustStatus(t, resp, body, http.StatusNotFound)
	}
}

// TestEvictedResourceStaysListed: a resource the engine forgot keeps its
// place in the list and its history (that the pipeline lets go of its
// tally is TestPipelineForgetsEvictedResources).
func TestEvictedResourceStaysListed(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil,
		func(o *engine.Options) { o.ResourceIdleTTL = time.Minute })
	traffic(t, n.engine, "gone", 3, 0, 1)
	n.flush(t)
	clock.Advance(3 * store.MinuteMs)
	if n.engine.EvictIdle() != 1 || n.engine.Lookup("gone") != nil {
		t.Fatal("gone was not evicted")
	}
	traffic(t, n.engine, "other", 1, 0, 1)
	n.flush(t)

	resp, body := n.call(t, http.MethodGet, "/api/v1/resources?q=gone", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	list := decodeStrict[ResourceList](t, body)
	at := time.UnixMilli(metricsT0).UTC()
	if list.Total != 1 || list.Items[0].FirstSeen == nil || !list.Items[0].FirstSeen.Equal(at) || list.Items[0].Live != (LiveStats{}) {
		t.Fatalf("list %+v, want gone, first seen at %v, without live traffic", list, at)
	}
	got := n.history(t, "gone", rangeQuery(metricsT0, metricsT0+store.HourMs, "1h"))
	if len(got.Points) != 1 || got.Points[0].Pass != 3 {
		t.Errorf("history %+v, want the 3 passes", got.Points)
	}
}

// TestResourcesListSeesTheLastMinute: a read in a new minute collects what
// the engine counted at the end of the last one, even when no resource
// appeared since the last collection.
func TestResourcesListSeesTheLastMinute(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0 + 30_000)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	traffic(t, n.engine, "orders", 2, 0, 1)
	n.flush(t)
	clock.Set(metricsT0 + 59_000)
	traffic(t, n.engine, "orders", 3, 0, 1)
	clock.Set(metricsT0 + store.MinuteMs + 5_000)
	resp, body := n.call(t, http.MethodGet, "/api/v1/resources", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	list := decodeStrict[ResourceList](t, body)
	if len(list.Items) != 1 || list.Items[0].LastMinute.Pass != 5 {
		t.Fatalf("items %+v, want orders with the 5 passes of the last minute", list.Items)
	}
	if last := list.Items[0].LastSeen; last == nil || last.Before(time.UnixMilli(metricsT0+59_000)) {
		t.Errorf("last seen %v, want no earlier than the calls at 59 s", last)
	}
}

// TestResourcesRankedByBlockedShare: sort=-blockedShare ranks the
// resources with calls in the last minute by the share blocked, ties by
// blocked calls, so that a resource blocking every call comes before one
// blocking a tenth of many more; each item's recent figures and the
// summary (Sluice's own routes left out) are the calls of those seconds
// over 60.
func TestResourcesRankedByBlockedShare(t *testing.T) {
	t.Parallel()
	clock := engine.NewManualClock(metricsT0 + 5_000)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	n.createRule(t, map[string]any{"kind": "flow", "resource": "r-all", "threshold": 0})
	n.createRule(t, map[string]any{"kind": "flow", "resource": "r-all-more", "threshold": 0})
	n.createRule(t, map[string]any{"kind": "flow", "resource": "r-tenth", "threshold": 9})
	n.createRule(t, map[string]any{"kind": "flow", "resource": "r-half", "threshold": 1})
	n.createRule(t, map[string]any{"kind": "flow", "resource": "r-idle", "threshold": 1})
	clock.Advance(1000)
	calls := map[string]int{"r-all": 1, "r-all-more": 2, "r-tenth": 10, "r-half": 2, "r-passing": 4}
	var pass, block int
	for range 3 {
		for name, count := range calls {
			p, b := traffic(t, n.engine, name, count, 0, 1)
			pass, block = pass+p, block+b
		}
		n.metrics.SampleLive()
		clock.Advance(1000)
	}

	resp, body := n.call(t, http.MethodGet, "/api/v1/resources?q=r-&sort=-blockedShare", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	list := decodeStrict[ResourceList](t, body)
	var got []string
	for _, it := range list.Items {
		got = append(got, it.Name)
	}
	if want := []string{"r-all-more", "r-all", "r-half", "r-tenth", "r-passing", "r-idle"}; !slices.Equal(got, want) {
		t.Fatalf("order %q, want %q", got, want)
	}
	tenth := list.Items[3].Recent
	if want := (RecentFigures{PassQps: 27.0 / 60, BlockQps: 3.0 / 60, BlockedShare: 0.1}); tenth != want {
		t.Errorf("r-tenth recent %+v, want %+v", tenth, want)
	}
	if want := (RecentFigures{PassQps: float64(pass) / 60, BlockQps: float64(block) / 60, BlockedShare: float64(block) / float64(pass+block)}); list.Summary != want {
		t.Errorf("summary %+v, want %+v", list.Summary, want)
	}

	resp, body = n.call(t, http.MethodGet, "/api/v1/resources?sort=-blocked", nil, nil)
	mustStatus(t, resp, body, http.StatusBadRequest)
	if !strings.Contains(string(body), `"field":"sort"`) {
		t.Errorf("a bad sort answered %s, want sort named", body)
	}
}
