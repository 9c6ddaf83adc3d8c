package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"gorm.io/gorm"
)

func addEndpoint(t *testing.T, s *Store, e WebhookEndpoint) WebhookEndpoint {
	t.Helper()
	e.Enabled, e.URL, e.Secret = true, "http://receiver.example/hook", "whsec_x"
	if err := s.CreateWebhook(t.Context(), &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestPublishInTheChangesTransaction(t *testing.T) {
	s, _ := openTestStore(t)
	all := addEndpoint(t, s, WebhookEndpoint{Events: []string{"*"}})
	checkout := addEndpoint(t, s, WebhookEndpoint{Events: []string{"rule.created"}, App: "checkout"})
	addEndpoint(t, s, WebhookEndpoint{Events: []string{"breaker.opened"}})
	rolledBack := errors.New("refused")
	err := s.InTx(t.Context(), func(tx *Tx) error {
		if _, err := tx.Publish(Announcement{Type: "rule.created", Data: []byte(`{}`), Apps: []string{"checkout"}}); err != nil {
			return err
		}
		return rolledBack
	})
	if !errors.Is(err, rolledBack) {
		t.Fatal(err)
	}
	if due, err := s.ClaimDeliveries(t.Context(), "a", time.Now().UnixMilli()+1, 1000, 10); err != nil || len(due) != 0 {
		t.Fatalf("after a rolled back write, due %+v, %v; want none", due, err)
	}
	var id string
	err = s.InTx(t.Context(), func(tx *Tx) error {
		id, err = tx.Publish(Announcement{Type: "rule.created", Data: []byte(`{"n":1}`), Apps: []string{"checkout"}})
		return err
	})
	if err != nil || len(id) < 10 || id[:4] != "msg_" {
		t.Fatalf("id %q, %v", id, err)
	}
	nowMs := time.Now().UnixMilli() + 1
	due, err := s.ClaimDeliveries(t.Context(), "a", nowMs, 60_000, 10)
	if err != nil || len(due) != 2 || due[0].EndpointID != all.ID || due[1].EndpointID != checkout.ID || due[0].EventID != id {
		t.Fatalf("due %+v, %v; want the event for the two endpoints that want it", due, err)
	}
	if due[0].Payload == "" || due[0].EventType != "rule.created" || due[0].URL == "" {
		t.Fatalf("due %+v", due[0])
	}
	if again, _ := s.ClaimDeliveries(t.Context(), "b", nowMs, 60_000, 10); len(again) != 0 {
		t.Fatalf("another node claimed %+v while the lease holds", again)
	}
	if paused, err := s.FinishDelivery(t.Context(), due[0].ID, "a", Attempt{AtMs: nowMs, Status: 204}); err != nil || paused {
		t.Fatal(paused, err)
	}
	failed := Attempt{AtMs: nowMs, Status: 500, Error: "HTTP 500", NextAttemptMs: nowMs + 10, RetryForMs: 1000, PauseAfterFailures: 2, PauseAfterMs: 0}
	if paused, err := s.FinishDelivery(t.Context(), due[1].ID, "a", failed); err != nil || paused {
		t.Fatal(paused, err)
	}
	if again, _ := s.ClaimDeliveries(t.Context(), "b", nowMs+10, 60_000, 10); len(again) != 1 || again[0].ID != due[1].ID || again[0].Attempts != 1 {
		t.Fatalf("claimed %+v, want the failed delivery again", again)
	}
	failed.AtMs, failed.NextAttemptMs = nowMs+10, nowMs+20
	if paused, err := s.FinishDelivery(t.Context(), due[1].ID, "b", failed); err != nil || !paused {
		t.Fatalf("the second failure in a row: paused %v, %v", paused, err)
	}
	if again, _ := s.ClaimDeliveries(t.Context(), "b", nowMs+30, 60_000, 10); len(again) != 0 {
		t.Fatalf("a paused endpoint's delivery was claimed: %+v", again)
	}
	if err := s.ResumeWebhook(t.Context(), checkout.ID, nowMs+30); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.ClaimDeliveries(t.Context(), "b", nowMs+30, 60_000, 10); len(again) != 1 {
		t.Fatalf("after resume, claimed %+v", again)
	}
	list, err := s.WebhookDeliveries(t.Context(), checkout.ID, 10)
	if err != nil || len(list) != 1 || list[0].State != DeliveryPending || list[0].Attempts != 2 || list[0].EventType != "rule.created" {
		t.Fatalf("deliveries %+v, %v", list, err)
	}
	if n, err := s.PruneWebhookDeliveries(t.Context(), nowMs+1); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want the delivered one", n, err)
	}
	if err := s.DeleteWebhook(t.Context(), checkout.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneWebhookDeliveries(t.Context(), nowMs+1); err != nil || n != 0 {
		t.Fatal(n, err)
	}
}

// TestAnnounceInstanceStateOnce holds the replicas to one announcement of
// each instance state change: the second of two replicas that saw the
// same change records and publishes nothing.
func TestAnnounceInstanceStateOnce(t *testing.T) {
	s, _ := openTestStore(t)
	addEndpoint(t, s, WebhookEndpoint{Events: []string{"*"}})
	if won, err := s.AnnounceInstanceState(t.Context(), "i1", "", "live", Announcement{}); err != nil || !won {
		t.Fatal(won, err)
	}
	if won, err := s.AnnounceInstanceState(t.Context(), "i1", "", "live", Announcement{}); err != nil || won {
		t.Fatalf("a second first sighting: won %v, %v", won, err)
	}
	stale := Announcement{Type: "instance.stale", Data: []byte(`{}`)}
	for i, want := range []bool{true, false} {
		if won, err := s.AnnounceInstanceState(t.Context(), "i1", "live", "stale", stale); err != nil || won != want {
			t.Fatalf("announcement %d: won %v, %v; want %v", i, won, err, want)
		}
	}
	due, err := s.ClaimDeliveries(t.Context(), "a", time.Now().UnixMilli()+1, 1000, 10)
	if err != nil || len(due) != 1 || due[0].EventType != "instance.stale" {
		t.Fatalf("due %+v, %v; want one instance.stale", due, err)
	}
	if states, err := s.AnnouncedInstanceStates(t.Context()); err != nil || states["i1"] != "stale" {
		t.Fatalf("states %v, %v", states, err)
	}
}

// TestAnnouncedInstanceStatesWaitForNoWrite reads the announced states
// while a transaction holds the store's writer: every replica reads them
// every few seconds, and on SQLite the writer is one connection, which
// the reports' group commits would otherwise wait behind.
func TestAnnouncedInstanceStatesWaitForNoWrite(t *testing.T) {
	s, _ := openTestStore(t)
	if won, err := s.AnnounceInstanceState(t.Context(), "i1", "", "live", Announcement{}); err != nil || !won {
		t.Fatal(won, err)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(`UPDATE webhook_instance_states SET state = 'stale' WHERE uid = 'i1'`).Error; err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	states, err := s.AnnouncedInstanceStates(ctx)
	close(release)
	if err != nil || states["i1"] != "live" {
		t.Fatalf("states %v, %v; want i1 live, the state committed, while the writer is held", states, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStartBlockAlertOnce holds replicas that both found a resource's
// block rate sustained to one announcement; ended, the next episode is
// announced again.
func TestStartBlockAlertOnce(t *testing.T) {
	s, _ := openTestStore(t)
	e := addEndpoint(t, s, WebhookEndpoint{Events: []string{"resource.blockRate"}})
	a := Announcement{Type: "resource.blockRate", Data: []byte(`{}`)}
	for i, want := range []bool{true, false} {
		if won, err := s.StartBlockAlert(t.Context(), e.ID, "pay", a); err != nil || won != want {
			t.Fatalf("start %d: won %v, %v; want %v", i, won, err, want)
		}
	}
	if err := s.EndBlockAlert(t.Context(), e.ID, "pay"); err != nil {
		t.Fatal(err)
	}
	if won, err := s.StartBlockAlert(t.Context(), e.ID, "pay", a); err != nil || !won {
		t.Fatalf("after the end: won %v, %v", won, err)
	}
	if list, err := s.WebhookDeliveries(t.Context(), e.ID, 10); err != nil || len(list) != 2 {
		t.Fatalf("deliveries %d, %v; want 2", len(list), err)
	}
}

func TestSustainedBlocks(t *testing.T) {
	s, _ := openTestStore(t)
	const end = 100 * MinuteMs
	var deltas []MinuteDelta
	for i := int64(1); i <= 3; i++ {
		deltas = append(deltas,
			MinuteDelta{Resource: "pay", StartMs: end - i*MinuteMs, Counts: engine.Counts{Calls: engine.Calls{Pass: 5, Block: 5}}},
			MinuteDelta{Resource: "quiet", StartMs: end - i*MinuteMs, Counts: engine.Counts{Calls: engine.Calls{Pass: 1, Block: 8}}})
	}
	if err := s.AddMetrics(t.Context(), deltas); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		minutes int64
		percent int
		want    []string
	}{{3, 50, []string{"pay"}}, {3, 51, nil}, {4, 50, nil}, {2, 50, []string{"pay"}}} {
		got, err := s.SustainedBlocks(t.Context(), end-tc.minutes*MinuteMs, end, tc.percent)
		if err != nil || len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
			t.Errorf("%d minutes at %d%%: %v, %v; want %v (quiet has under %d calls a minute)", tc.minutes, tc.percent, got, err, tc.want, BlockRateMinCalls)
		}
	}
}
