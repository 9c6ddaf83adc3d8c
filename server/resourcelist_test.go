package server

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// TestMergedNames: a page of the catalogue less skip, merged with extra,
// is the slice of that list, for random sets, every offset and filter.
func TestMergedNames(t *testing.T) {
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "sluice.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var universe []string
	for i := range 60 {
		universe = append(universe, fmt.Sprintf("%c-r%02d", "aBcD"[i%4], i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var stored, others []string
	for _, name := range universe {
		if rng.IntN(3) > 0 {
			stored = append(stored, name)
			continue
		}
		others = append(others, name)
	}
	var deltas []store.MinuteDelta
	for _, name := range stored {
		deltas = append(deltas, store.MinuteDelta{Resource: name, StartMs: metricsT0, Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
	}
	if err := st.AddMetrics(t.Context(), deltas); err != nil {
		t.Fatal(err)
	}
	h := &resourceHandler{store: st}
	pick := func(from []string, q string) []string {
		var out []string
		for _, name := range from {
			if rng.IntN(4) == 0 && store.NameContains(name, q) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	for trial := range 12 {
		q := []string{"", "b", "R1", "d-"}[trial%4]
		skip, extra := pick(stored, q), pick(others, q)
		var want []string
		for _, name := range stored {
			if _, skipped := slices.BinarySearch(skip, name); !skipped && store.NameContains(name, q) {
				want = append(want, name)
			}
		}
		want = append(want, extra...)
		slices.Sort(want)
		for _, limit := range []int{1, 2, 5, 50} {
			for offset := range len(want) + 2 {
				got, err := h.mergedNames(t.Context(), q, skip, extra, offset, limit)
				if err != nil {
					t.Fatal(err)
				}
				if w := want[min(offset, len(want)):min(offset+limit, len(want))]; !slices.Equal(got, w) {
					t.Fatalf("q %q, skip %q, extra %q, offset %d, limit %d:\n got %q\nwant %q", q, skip, extra, offset, limit, got, w)
				}
			}
		}
	}
}

// TestResourcesPaging walks every page of GET /resources, over HTTP on a
// real SQLite file, for each filter and order: stored resources (some from
// before a restart), a resource only a rule names, resources seen since
// the last flush and resources with live traffic come each exactly once,
// in order, with the same total on every page.
func TestResourcesPaging(t *testing.T) {
	clock := engine.NewManualClock(metricsT0 + 30_000)
	n := startMetricsNode(t, filepath.Join(t.TempDir(), "sluice.db"), clock, nil)
	var old []store.MinuteDelta
	for i := range 23 {
		name := []string{"GET /Orders/%02d", "get /users/%02d", "pay_%02d"}[i%3]
		old = append(old, store.MinuteDelta{Resource: fmt.Sprintf(name, i), StartMs: metricsT0 - store.HourMs, Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
	}
	if err := n.store.AddMetrics(t.Context(), old); err != nil {
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
			case order == sortByPassQps && live[name].pass > 0, order == sortByBlockQps && live[name].block > 0:
				ranked = append(ranked, name)
			default:
				rest = append(rest, name)
			}
		}
		rate := func(name string) int {
			if order == sortByBlockQps {
				return live[name].block
			}
			return live[name].pass
		}
		slices.SortFunc(ranked, func(a, b string) int { return cmp.Or(cmp.Compare(rate(b), rate(a)), strings.Compare(a, b)) })
		slices.Sort(rest)
		return append(ranked, rest...)
	}
	for _, q := range []string{"", "orders", "FRESH", "_", "nothing"} {
		for _, order := range []string{sortByName, sortByPassQps, sortByBlockQps} {
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
// place in the list and its history, and the flusher lets go of it.
func TestEvictedResourceStaysListed(t *testing.T) {
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
	if tallies := n.flusher.seen([]string{"gone", "other"}); len(tallies) != 1 {
		t.Errorf("the flusher holds tallies of %v, want only other's", slices.Collect(maps.Keys(tallies)))
	}

	resp, body := n.call(t, http.MethodGet, "/api/v1/resources?q=gone", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
	list := decodeStrict[ResourceList](t, body)
	at := time.UnixMilli(metricsT0).UTC()
	if list.Total != 1 || list.Items[0].FirstSeen == nil || !list.Items[0].FirstSeen.Equal(at) || list.Items[0].Live != (engine.LiveStats{}) {
		t.Fatalf("list %+v, want gone, first seen at %v, without live traffic", list, at)
	}
	got := n.history(t, "gone", rangeQuery(metricsT0, metricsT0+store.HourMs, "1h"))
	if len(got.Points) != 1 || got.Points[0].Pass != 3 {
		t.Errorf("history %+v, want the 3 passes", got.Points)
	}
}

// TestOverflowWarning: the server warns that the engine is full at most
// once a minute, with the calls since the last warning and a name.
func TestOverflowWarning(t *testing.T) {
	clock := engine.NewManualClock(metricsT0)
	eng := engine.New(engine.Options{Clock: clock, MaxResources: 1})
	t.Cleanup(eng.Close)
	logs := &syncBuffer{}
	w := &overflowWatch{engine: eng, logger: slog.New(slog.NewTextHandler(logs, nil))}
	warnings := func() []string {
		var out []string
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, "level=WARN") {
				out = append(out, line)
			}
		}
		return out
	}
	calls := func(names ...string) {
		for _, name := range names {
			if en, blk := eng.Entry(name); blk == nil {
				en.Exit()
			}
		}
	}

	calls("tracked", "tracked")
	w.check()
	calls("x-1", "x-2", "x-3")
	w.check()
	clock.Advance(30_000)
	calls("x-4", "x-5")
	w.check()
	if got := warnings(); len(got) != 1 || !strings.Contains(got[0], "calls=3 ") || !strings.Contains(got[0], "maxResources=1 ") || !strings.Contains(got[0], "example=x-1") {
		t.Fatalf("warnings %q, want one for the first 3 calls", got)
	}
	clock.Advance(30_000)
	w.check()
	clock.Advance(5 * 60_000)
	w.check()
	if got := warnings(); len(got) != 2 || !strings.Contains(got[1], "calls=2 ") {
		t.Fatalf("warnings %q, want a second one, a minute later, for the next 2 calls and no more", got)
	}
}

// TestResourcesListSeesTheLastMinute: a read in a new minute collects what
// the engine counted at the end of the last one, even when no resource
// appeared since the last collection.
func TestResourcesListSeesTheLastMinute(t *testing.T) {
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
