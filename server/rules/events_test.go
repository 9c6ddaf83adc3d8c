package rules

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/store"
)

// TestWritesPublishTheirEvents holds every rule write to an event in its
// own transaction: a write that commits leaves one pending delivery per
// endpoint, a write refused or rehearsed (dry run) leaves none.
func TestWritesPublishTheirEvents(t *testing.T) {
	s := openService(t)
	ctx := t.Context()
	hook := store.WebhookEndpoint{URL: "http://receiver.example/", Secret: "whsec_x", Events: []string{"*"}, Enabled: true}
	if err := s.store.CreateWebhook(ctx, &hook); err != nil {
		t.Fatal(err)
	}
	r, err := s.Create(ctx, decoded(t, `{"kind":"flow","resource":"orders","threshold":5}`), tester)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, decoded(t, `{"kind":"flow","name":"flow-orders","resource":"pay","threshold":5}`), tester); err == nil {
		t.Fatal("a rule of a taken name was written")
	}
	edit := func(current Rule) (Rule, error) { current.Description = "edited"; return current, nil }
	if _, err := s.Update(ctx, r.ID, nil, edit, tester); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rollback(ctx, r.ID, 1, nil, tester); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, r.ID, nil, tester); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, []Rule{decoded(t, `{"kind":"flow","name":"applied","resource":"pay","threshold":1}`)}, ApplyOptions{}, tester); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, []Rule{decoded(t, `{"kind":"flow","name":"dry","resource":"pay","threshold":1}`)}, ApplyOptions{DryRun: true}, tester); err != nil {
		t.Fatal(err)
	}
	due, err := s.store.ClaimDeliveries(ctx, "test", time.Now().UnixMilli()+1, 60_000, 100)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, d := range due {
		types = append(types, d.EventType)
	}
	want := []string{EventRuleCreated, EventRuleUpdated, EventRuleRolledBack, EventRuleDeleted, EventRulesApplied}
	if len(types) != len(want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("events %v, want %v", types, want)
		}
	}
	var updated struct {
		Type string    `json:"type"`
		Data RuleEvent `json:"data"`
	}
	if err := json.Unmarshal([]byte(due[1].Payload), &updated); err != nil {
		t.Fatal(err)
	}
	if updated.Type != EventRuleUpdated || updated.Data.Rule.ID != r.ID || updated.Data.Rule.Version != 2 ||
		updated.Data.Rule.Description != "edited" || updated.Data.Actor != "tester" || updated.Data.Reason != "test" {
		t.Fatalf("rule.updated payload %s", due[1].Payload)
	}
}

// BenchmarkCreateRule is the cost of a rule write on SQLite without a
// webhook endpoint and with one (the event and its delivery written in
// the write's transaction): the outbox's cost on a write, per write and
// as the median and 99th percentile of one.
func BenchmarkCreateRule(b *testing.B) {
	for _, endpoints := range []int{0, 1} {
		b.Run(fmt.Sprintf("endpoints=%d", endpoints), func(b *testing.B) {
			s := openService(b)
			for range endpoints {
				hook := store.WebhookEndpoint{URL: "http://receiver.example/", Secret: "whsec_x", Events: []string{"*"}, Enabled: true}
				if err := s.store.CreateWebhook(b.Context(), &hook); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			latencies := make([]time.Duration, 0, b.N)
			for b.Loop() {
				i++
				r := decoded(b, fmt.Sprintf(`{"kind":"flow","resource":"r%d","threshold":5}`, i))
				start := time.Now()
				if _, err := s.Create(b.Context(), r, tester); err != nil {
					b.Fatal(err)
				}
				latencies = append(latencies, time.Since(start))
			}
			slices.Sort(latencies)
			b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
