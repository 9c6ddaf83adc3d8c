package demo

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/store"
)

// startDemo runs the rule domain and the demo on the database at path and
// returns the rule service, the demo traffic and the store; stop shuts
// them all down.
func startDemo(t *testing.T, path string, eng *engine.Engine) (svc *rules.Service, d *Traffic, st *store.Store, stop func()) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	st, err := store.Open(t.Context(), path, logger)
	if err != nil {
		t.Fatal(err)
	}
	svc = rules.New(st, eng)
	if err := svc.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	d, err = Start(t.Context(), svc, eng, logger)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		d.Close()
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return svc, d, st, stop
}

// demoRulesIn returns the stored demo rules by name.
func demoRulesIn(t *testing.T, st *store.Store) map[string]store.Rule {
	t.Helper()
	rows, err := st.AllRules(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]store.Rule{}
	for _, r := range rows {
		if strings.HasPrefix(r.Name, NamePrefix) {
			found[r.Name] = r
		}
	}
	return found
}

func TestDemoSeedsItsRulesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.db")
	tests := []struct {
		name string
		// change edits the stored rules, and the server starts again.
		change      func(t *testing.T, svc *rules.Service)
		wantVersion map[string]int64
		wantEnabled map[string]bool
	}{
		{name: "first start"},
		{name: "a restart changes nothing"},
		{
			name: "a changed demo rule is kept, a deleted one comes back",
			change: func(t *testing.T, svc *rules.Service) {
				who := rules.Actor{Name: "test"}
				all, err := svc.All(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range all {
					switch r.Name {
					case "demo-orders-qps":
						disable := func(current rules.Rule) (rules.Rule, error) {
							current.Enabled = false
							return current, nil
						}
						if _, err := svc.Update(t.Context(), r.ID, nil, disable, who); err != nil {
							t.Fatal(err)
						}
					case "demo-search-shadow":
						if err := svc.Delete(t.Context(), r.ID, nil, who); err != nil {
							t.Fatal(err)
						}
					}
				}
			},
			wantVersion: map[string]int64{"demo-orders-qps": 2},
			wantEnabled: map[string]bool{"demo-orders-qps": false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := engine.New(engine.Options{})
			t.Cleanup(eng.Close)
			svc, _, st, stop := startDemo(t, path, eng)
			if tt.change != nil {
				tt.change(t, svc)
				stop()
				_, _, st, _ = startDemo(t, path, eng)
			}

			found := demoRulesIn(t, st)
			if len(found) != len(demoRules) {
				t.Fatalf("%d demo rules stored, want %d: %v", len(found), len(demoRules), found)
			}
			for name, r := range found {
				// The fleet's rules name the shop's routes, which the
				// demo instances serve.
				onShop := strings.HasPrefix(name, NamePrefix+"shop-")
				if !strings.HasPrefix(r.Description, DescriptionPrefix) || strings.HasPrefix(r.Resource, "demo:") == onShop {
					t.Errorf("%s is not marked as demo data: resource %q, description %q", name, r.Resource, r.Description)
				}
				if want := max(tt.wantVersion[name], 1); r.Version != want {
					t.Errorf("%s is at version %d, want %d", name, r.Version, want)
				}
				want, listed := tt.wantEnabled[name]
				if r.Enabled != (want || !listed) {
					t.Errorf("%s enabled = %v", name, r.Enabled)
				}
			}
			loaded := 0
			for _, r := range eng.FlowRules() {
				if strings.HasPrefix(r.Name, NamePrefix) && strings.HasPrefix(r.Resource, "demo:") {
					loaded++
				}
			}
			if want := 4 - len(tt.wantEnabled); loaded != want {
				t.Errorf("the engine has %d demo flow rules, want %d", loaded, want)
			}
		})
	}
}

func TestDemoTrafficReachesEveryResource(t *testing.T) {
	clock := engine.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli())
	eng := engine.New(engine.Options{Clock: clock})
	t.Cleanup(eng.Close)
	d := newDemoTraffic(eng)

	for range 10 {
		d.send(demoTick)
		clock.Advance(demoTick.Milliseconds())
	}
	for _, s := range demoStreams {
		if live := eng.Resource(s.resource).Live(); live.PassQps < 5 {
			t.Errorf("%s: %+v, want traffic", s.resource, live)
		}
	}
	checkout := eng.Resource("demo:POST /checkout")
	if checkout.Concurrency() == 0 {
		t.Error("no checkout is held in flight")
	}
	clock.Advance(1000)
	d.due = make([]float64, len(d.streams))
	d.streams = nil
	d.send(demoTick)
	if n := checkout.Concurrency(); n != 0 {
		t.Errorf("%d checkouts in flight after their time, want 0", n)
	}
}

func TestDemoTrafficRunsUntilShutdown(t *testing.T) {
	eng := engine.New(engine.Options{})
	t.Cleanup(eng.Close)
	_, d, _, stop := startDemo(t, filepath.Join(t.TempDir(), "sluice.db"), eng)
	orders := eng.Resource("demo:GET /orders")
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for orders.Live().PassQps == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no demo traffic within 10 s")
		}
		<-tick.C
	}

	stop()

	select {
	case <-d.done:
	default:
		t.Error("the demo traffic still runs after Shutdown")
	}
}
