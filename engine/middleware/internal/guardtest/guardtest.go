package guardtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// NewEngine returns an engine on a manual clock with rules loaded.
func NewEngine(t *testing.T, rules ...engine.FlowRule) (*engine.Engine, *engine.ManualClock) {
	t.Helper()
	clock := engine.NewManualClock(1_700_000_000_000)
	eng := engine.New(engine.Options{Clock: clock})
	t.Cleanup(eng.Close)
	if err := eng.LoadFlowRules(rules); err != nil {
		t.Fatal(err)
	}
	return eng, clock
}

// Client is the client the tests send requests with: it gives up on a
// server that hangs instead of hanging the test.
var Client = &http.Client{Timeout: 10 * time.Second}

// Get sends a request to url and returns the answer with its body read.
func Get(t *testing.T, method, url string) (*http.Response, string) {
	t.Helper()
	return Send(t, method, url, nil)
}

// CheckBlocked checks a block answer: 429, Retry-After and the error
// envelope naming the rule.
func CheckBlocked(t *testing.T, resp *http.Response, body, wantMessage string) {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status = %d, want 429 (%s)", resp.StatusCode, body)
	}
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", got)
	}
	var envelope struct {
		Error struct {
			Code    string            `json:"code"`
			Message string            `json:"message"`
			Details []json.RawMessage `json:"details"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&envelope); err != nil {
		t.Fatalf("body is not the error envelope: %v\n%s", err, body)
	}
	if envelope.Error.Code != "too_many_requests" || envelope.Error.Message != wantMessage || envelope.Error.Details == nil {
		t.Errorf("body = %s, want code too_many_requests, message %q and details []", body, wantMessage)
	}
}

// Stats is what a test reads of a resource.
type Stats struct {
	Pass, Block, Complete, Errors int
	AvgRtMs                       float64
}

// StatsOf reads the named resource's last second; the zero Stats if the
// engine does not know it.
func StatsOf(eng *engine.Engine, name string) Stats {
	for _, r := range eng.Resources() {
		if r.Name() == name {
			l := r.Live()
			return Stats{Pass: int(l.PassQps), Block: int(l.BlockQps), Complete: int(l.CompleteQps), Errors: int(l.ErrorQps), AvgRtMs: l.AvgRtMs}
		}
	}
	return Stats{}
}

// ResourceNames lists the resources the engine knows.
func ResourceNames(eng *engine.Engine) map[string]bool {
	names := map[string]bool{}
	for _, r := range eng.Resources() {
		names[r.Name()] = true
	}
	return names
}

// WaitFor polls check until it holds or a deadline passes.
func WaitFor(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
