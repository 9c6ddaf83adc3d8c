package check

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// testLease is the entries' lease in these tests.
const testLease = 5 * time.Second

// newTestAPI is an API over an engine on a manual clock, with its
// entries, which the test closes.
func newTestAPI(t *testing.T) (*API, *engine.ManualClock) {
	t.Helper()
	clock := engine.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli())
	e := engine.New(engine.Options{Clock: clock})
	t.Cleanup(e.Close)
	entries := newEntries(clock, testLease)
	return New(e, entries), clock
}

// TestDecidePassesNewFieldsWithoutAllocating: handing a check's origin,
// params and priority to the engine, and reading the status of the limit
// it came nearest to, allocates nothing, whether the call passes or is
// blocked by a hotspot or an authority rule.
func TestDecidePassesNewFieldsWithoutAllocating(t *testing.T) {
	h, _ := newTestAPI(t)
	if err := h.engine.LoadHotspotRules([]engine.HotspotRule{{Name: "per-user", Resource: "orders", ParamKey: "user",
		Threshold: 1e9, SpecificItems: map[string]float64{"banned": 0}}}); err != nil {
		t.Fatal(err)
	}
	if err := h.engine.LoadAuthorityRules([]engine.AuthorityRule{{Name: "shops", Resource: "orders",
		Strategy: engine.AuthorityAllow, Origins: []string{"shop"}}}); err != nil {
		t.Fatal(err)
	}
	if err := h.engine.LoadFlowRules([]engine.FlowRule{{Name: "cap", Resource: "orders", Threshold: 1e9}}); err != nil {
		t.Fatal(err)
	}
	params := []checkParam{{"ip", "10.0.0.1"}, {"user", "42"}}
	var manyParams []checkParam
	for i := range maxCheckParams - 1 {
		manyParams = append(manyParams, checkParam{fmt.Sprintf("k%02d", i), "v"})
	}
	manyParams = append(manyParams, checkParam{"user", "42"})
	tests := []struct {
		name       string
		q          checkQuery
		wantReason string
	}{
		{"passes", checkQuery{resource: "orders", count: 1, origin: "shop", prioritized: true, params: params}, ""},
		{"a hotspot rule blocks", checkQuery{resource: "orders", count: 1, origin: "shop", params: []checkParam{{"user", "banned"}}}, "hotspot"},
		{"an authority rule blocks", checkQuery{resource: "orders", count: 1, origin: "other", params: params}, "authority"},
		{"passes with many params", checkQuery{resource: "orders", count: 1, origin: "shop", params: manyParams}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := h.decide(tt.q); got.reason != tt.wantReason {
				t.Fatalf("decide = %+v, want reason %q", got, tt.wantReason)
			}
			if allocs := testing.AllocsPerRun(100, func() { h.decide(tt.q) }); allocs != 0 {
				t.Errorf("decide allocates %v times", allocs)
			}
		})
	}
}

// TestEntriesForgetWhatTheyHeld: every way an entry ends (its id, a
// complete without one, its lease) empties the table and its index by
// resource, and a settled id answers ErrEntryEnded for one more lease,
// then ErrUnknownEntry.
func TestEntriesForgetWhatTheyHeld(t *testing.T) {
	h, clock := newTestAPI(t)
	if err := h.engine.LoadFlowRules([]engine.FlowRule{{Name: "slots", Resource: "reports",
		Metric: engine.MetricConcurrency, Threshold: 10}}); err != nil {
		t.Fatal(err)
	}
	entries := h.entries
	ids := make([]string, 3)
	for i := range ids {
		r := h.decide(checkQuery{resource: "reports", count: 1})
		if r.entryID == "" {
			t.Fatalf("check %d: %+v, want an entryId", i, r)
		}
		ids[i] = r.entryID
	}
	if _, _, err := entries.claim("reports"); !errors.As(err, new(*ValidationError)) {
		t.Errorf("claim while counted entries are held: %v, want a ValidationError", err)
	}
	clock.Advance(testLease.Milliseconds() - 1)
	held, err := entries.take(ids[0], func(heldEntry) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	held.entry.Exit()
	clock.Advance(1)
	if n := entries.Expire(); n != 2 {
		t.Errorf("Expire = %d, want the other 2", n)
	}
	entries.mu.Lock()
	indexed := len(entries.byResource)
	entries.mu.Unlock()
	if entries.Held() != 0 || indexed != 0 {
		t.Errorf("%d entries held, %d resources indexed; want none", entries.Held(), indexed)
	}
	for _, id := range ids {
		if _, err := entries.take(id, nil); !errors.Is(err, ErrEntryEnded) {
			t.Errorf("take(%s) after it ended: %v, want ErrEntryEnded", id, err)
		}
	}
	clock.Advance(testLease.Milliseconds())
	entries.Expire()
	if _, err := entries.take(ids[1], nil); !errors.Is(err, ErrUnknownEntry) {
		t.Errorf("take a lease after it ended: %v, want ErrUnknownEntry", err)
	}
}
