package remote_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/remote"
	"github.com/sluicehq/sluice/engine/wire"
)

// ownStats are figures of the caller's own, as a bridge to another
// library counts them: one finished minute of checkout, handed out once.
type ownStats struct {
	mu        sync.Mutex
	collected bool
}

func (s *ownStats) NowMs() int64 { return t0 + 120_000 }

func (s *ownStats) CollectMinutes() []engine.MinuteStat {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.collected {
		return nil
	}
	s.collected = true
	return []engine.MinuteStat{{Resource: "checkout", StartMs: t0, Finished: true,
		Counts: engine.Counts{Calls: engine.Calls{Pass: 5, Complete: 5}, RtSumMs: 50, MinRtMs: 10, MaxRtMs: 10, MaxConcurrency: 1}}}
}

func (s *ownStats) Live(dst []wire.ReportLive) []wire.ReportLive {
	return append(dst, wire.ReportLive{Resource: "checkout", LiveStats: wire.LiveStats{PassQps: 5}})
}

// TestNewWithSyncsIntoLoadAndReportsStats runs a Client without an
// engine: each snapshot goes to Hooks.Load, a set it refuses is not in
// force, and the minutes of Hooks.Stats reach the server.
func TestNewWithSyncsIntoLoadAndReportsStats(t *testing.T) {
	srv := startTestServer(t, flowRule("checkout-qps", "checkout", 0))
	loaded := make(chan wire.Snapshot, 4)
	refuse := errors.New("no such kind here")
	var refusing sync.Mutex
	var refusal error
	c, err := remote.NewWith(remote.Config{ServerURL: srv.URL(), Token: testToken, App: "shop"}, remote.Hooks{
		Load: func(snap wire.Snapshot) error {
			refusing.Lock()
			defer refusing.Unlock()
			if refusal == nil {
				loaded <- snap
			}
			return refusal
		},
		Stats: &ownStats{},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.Engine() != nil {
		t.Fatal("a Client of NewWith runs an engine")
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	snap := <-loaded
	if snap.Revision != 1 || len(snap.Rules) != 1 {
		t.Fatalf("Load got revision %d with %d rules, want the server's revision 1 with its rule", snap.Revision, len(snap.Rules))
	}
	waitReady(t, c)
	eventually(t, "the server counts the minute of Stats", func() bool { return srv.passes("checkout") == 5 })

	refusing.Lock()
	refusal = refuse
	refusing.Unlock()
	srv.setRules()
	eventually(t, "the refused set is in State", func() bool { return errors.Is(c.State().LastError, refuse) })
	if s := c.State(); s.Revision != 1 {
		t.Fatalf("revision in force %d after Load refused revision 2, want 1", s.Revision)
	}
	srv.checkNoMismatch()

	if _, err := remote.NewWith(remote.Config{ServerURL: srv.URL(), App: "shop"}, remote.Hooks{}); err == nil {
		t.Fatal("NewWith without Load and Stats: no error")
	}
}
