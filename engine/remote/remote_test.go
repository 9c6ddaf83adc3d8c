package remote_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/remote"
)

// t0 is when the tests' manual clocks start: the start of a minute.
var t0 = time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC).UnixMilli()

// flowRule is a flow rule as GET /rules shows it.
func flowRule(name, resource string, threshold float64) string {
	return fmt.Sprintf(`{"id": 1, "name": %q, "kind": "flow", "resource": %q, "enabled": true, "mode": "enforce",
		"description": "", "threshold": %v, "statIntervalMs": 1000, "metric": "qps", "controlBehavior": "reject",
		"tokenCalculateStrategy": "direct", "relationStrategy": "current", "limitApp": "default", "scope": "local",
		"version": 1, "createdAt": "2026-11-01T00:00:00Z", "updatedAt": "2026-11-01T00:00:00Z"}`, name, resource, threshold)
}

// startClient starts a client of the server at url on a manual clock set
// to t0, with short intervals; adjust changes its config first.
func startClient(t *testing.T, url string, adjust func(*remote.Config)) (*remote.Client, *engine.ManualClock) {
	t.Helper()
	clock := engine.NewManualClock(t0)
	cfg := remote.Config{
		ServerURL: url, Token: testToken, App: "shop", Version: "1.2.3",
		Engine:   engine.Options{Clock: clock},
		Logger:   slog.New(slog.NewTextHandler(t.Output(), nil)),
		PollWait: time.Second, ReportInterval: 5 * time.Millisecond,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		// The manual clock stops at a minute's end: its rows are posted
		// then (TestMinutesWaitTheirSpread holds the delay).
		MinuteSpread: -1,
	}
	if adjust != nil {
		adjust(&cfg)
	}
	c, err := remote.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return c, clock
}

// waitReady waits until the client has rules in force.
func waitReady(t *testing.T, c *remote.Client) {
	t.Helper()
	select {
	case <-c.Ready():
	case <-time.After(10 * time.Second):
		t.Fatalf("no rules in force after 10 s: %+v", c.State())
	}
}

// calls makes n calls to resource and returns how many passed.
func calls(e *engine.Engine, resource string, n int) int {
	passed := 0
	for range n {
		if entry, blk := e.Entry(resource); blk == nil {
			entry.Exit()
			passed++
		}
	}
	return passed
}

// deadAddress returns the URL of a port nothing listens on.
func deadAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}

func TestInitialSyncEnforcesTheRules(t *testing.T) {
	srv := startTestServer(t, flowRule("orders-qps", "orders", 2))
	c, _ := startClient(t, srv.URL(), nil)
	waitReady(t, c)
	if got := calls(c.Engine(), "orders", 3); got != 2 {
		t.Fatalf("%d of 3 calls passed a threshold of 2", got)
	}
	_, blk := c.Engine().Entry("orders")
	if blk == nil || blk.Rule() != "orders-qps" {
		t.Fatalf("got block %v, want one by orders-qps", blk)
	}
	st := c.State()
	if !st.HasRules || st.Revision != 1 || st.FromCache || st.LastSync.IsZero() {
		t.Fatalf("state %+v, want revision 1 from the server", st)
	}
}

func TestNewRevisionReplacesTheSet(t *testing.T) {
	srv := startTestServer(t, flowRule("orders-qps", "orders", 1), flowRule("pay-qps", "pay", 1))
	c, _ := startClient(t, srv.URL(), nil)
	waitReady(t, c)
	if got := calls(c.Engine(), "orders", 5); got != 1 {
		t.Fatalf("%d of 5 calls passed a threshold of 1", got)
	}
	srv.setRules(flowRule("pay-qps", "pay", 1))
	eventually(t, "revision 2 is in force", func() bool { return c.State().Revision == 2 })
	if got := calls(c.Engine(), "orders", 5); got != 5 {
		t.Fatalf("%d of 5 calls passed once their rule was removed", got)
	}
	if got := calls(c.Engine(), "pay", 5); got != 1 {
		t.Fatalf("%d of 5 calls passed the rule that stays", got)
	}
	if rules := c.Engine().FlowRules(); len(rules) != 1 || rules[0].Name != "pay-qps" {
		t.Fatalf("the engine holds %+v, want pay-qps alone", rules)
	}
}

func TestNotModifiedKeepsTheRules(t *testing.T) {
	srv := startTestServer(t, flowRule("orders-qps", "orders", 1))
	c, _ := startClient(t, srv.URL(), func(cfg *remote.Config) { cfg.PollWait = 10 * time.Millisecond })
	waitReady(t, c)
	first := c.State().LastSync
	eventually(t, "the server answered 304 twice", func() bool {
		var n int
		srv.read(func(s *testServer) { n = s.notModified })
		return n >= 2 && c.State().LastSync.After(first)
	})
	srv.read(func(s *testServer) {
		if s.etagsAsked[`"1"`] < 2 {
			t.Errorf("If-None-Match \"1\" asked %d times, want the long poll to name it", s.etagsAsked[`"1"`])
		}
	})
	if st := c.State(); st.Revision != 1 || st.LastError != nil {
		t.Fatalf("state %+v after 304s, want revision 1 and no error", st)
	}
	if got := calls(c.Engine(), "orders", 3); got != 1 {
		t.Fatalf("%d of 3 calls passed a threshold of 1 after 304s", got)
	}
}

func TestQuickNotModifiedIsNotAskedAgainAtOnce(t *testing.T) {
	srv := startTestServer(t, flowRule("orders-qps", "orders", 1))
	c, _ := startClient(t, srv.URL(), func(cfg *remote.Config) { cfg.MinBackoff = time.Hour })
	waitReady(t, c)
	// The new set reaches the poll the server holds, and the server closes
	// after: the client's next poll is the one answered 304 at once. Were
	// the server closing before the client asked again, that 304 would
	// come before the new set, and the client pause with revision 1.
	eventually(t, "the client's poll held", func() bool {
		var held int
		srv.read(func(s *testServer) { held = s.etagsAsked[`"1"`] })
		return held > 0
	})
	srv.setClosing(true)
	srv.setRules(flowRule("orders-qps", "orders", 2))
	eventually(t, "revision 2 is in force", func() bool { return c.State().Revision == 2 })
	asked := func() (n int) {
		srv.read(func(s *testServer) { n = s.notModified })
		return n
	}
	eventually(t, "a 304 is answered at once", func() bool { return asked() == 1 })
	// Watched for 100 ms: a client asking again at once would have asked
	// hundreds of times.
	deadline := time.Now().Add(100 * time.Millisecond)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if n := asked(); n != 1 {
			t.Fatalf("%d requests answered 304 at once, want the client to pause after the first", n)
		}
		<-tick.C
	}
}

func TestServerDownAtStartLoadsTheCachedSet(t *testing.T) {
	cache := t.TempDir()
	srv := startTestServer(t, flowRule("orders-qps", "orders", 1))
	first, _ := startClient(t, srv.URL(), func(cfg *remote.Config) { cfg.CacheDir = cache })
	waitReady(t, first)
	cached := filepath.Join(cache, "rules-shop.json")
	eventually(t, "the set is cached", func() bool { _, err := os.Stat(cached); return err == nil })
	first.Close()
	var saved struct {
		Revision int64             `json:"revision"`
		Rules    []json.RawMessage `json:"rules"`
	}
	body, err := os.ReadFile(cached)
	if err != nil || json.Unmarshal(body, &saved) != nil || saved.Revision != 1 || len(saved.Rules) != 1 {
		t.Fatalf("cache holds %s (%v), want revision 1 and its rule", body, err)
	}

	c, _ := startClient(t, deadAddress(t), func(cfg *remote.Config) { cfg.CacheDir = cache })
	waitReady(t, c)
	if st := c.State(); !st.FromCache || st.Revision != 1 {
		t.Fatalf("state %+v, want the cached revision 1", st)
	}
	if got := calls(c.Engine(), "orders", 3); got != 1 {
		t.Fatalf("%d of 3 calls passed the cached threshold of 1", got)
	}
	eventually(t, "the unreachable server is an error", func() bool { return c.State().LastError != nil })
	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache dir holds %v (%v), want the one file, no temporary one", entries, err)
	}
}

func TestCachedSetGivesWayToTheServers(t *testing.T) {
	cache := t.TempDir()
	srv := startTestServer(t, flowRule("orders-qps", "orders", 1))
	first, _ := startClient(t, srv.URL(), func(cfg *remote.Config) { cfg.CacheDir = cache })
	waitReady(t, first)
	eventually(t, "the set is cached", func() bool {
		_, err := os.Stat(filepath.Join(cache, "rules-shop.json"))
		return err == nil
	})
	first.Close()
	srv.setRules(flowRule("pay-qps", "pay", 1))

	c, _ := startClient(t, srv.URL(), func(cfg *remote.Config) { cfg.CacheDir = cache })
	eventually(t, "the server's revision 2 replaces the cached 1", func() bool {
		st := c.State()
		return st.Revision == 2 && !st.FromCache
	})
	if got := calls(c.Engine(), "orders", 3); got != 3 {
		t.Fatalf("%d of 3 calls passed, want the cached rule gone", got)
	}
}

func TestMinutesArriveOnceAfterTheServerReturns(t *testing.T) {
	srv := startTestServer(t, flowRule("pay-qps", "pay", 1))
	c, clock := startClient(t, srv.URL(), nil)
	waitReady(t, c)
	e := c.Engine()
	made := calls(e, "orders", 5)
	eventually(t, "a report arrives", func() bool { return !c.State().LastReport.IsZero() })

	srv.setDown(true)
	made += calls(e, "orders", 3)
	clock.Advance(60_000)
	made += calls(e, "orders", 4)
	if got := calls(e, "pay", 2); got != 1 {
		t.Fatalf("%d of 2 calls passed a threshold of 1 while the server is away", got)
	}
	clock.Advance(60_000)
	eventually(t, "three finished minutes are buffered", func() bool { return c.State().BufferedMinutes == 3 })

	// The first two answers are lost after the server counted the
	// minutes: the client sends them again, the server counts them once.
	srv.loseNextAnswers(2)
	srv.setDown(false)
	eventually(t, "every pass is reported", func() bool {
		return srv.passes("orders") == int64(made) && c.State().BufferedMinutes == 0
	})
	srv.checkNoMismatch()
	if got := srv.passes("pay"); got != 1 {
		t.Errorf("pay reported %d passes, want 1", got)
	}
	srv.read(func(s *testServer) {
		if s.duplicates == 0 {
			t.Errorf("no minute was sent twice: the lost answers were not retried")
		}
	})
	if want := map[string]int64{"2026-11-24T04:00:00Z": 8, "2026-11-24T04:01:00Z": 4}; fmt.Sprint(srv.minutePasses("orders")) != fmt.Sprint(want) {
		t.Fatalf("orders minutes %v, want %v", srv.minutePasses("orders"), want)
	}
	if st := c.State(); st.DroppedMinutes != 0 {
		t.Fatalf("%d minutes dropped", st.DroppedMinutes)
	}
}

func TestFullBufferDropsTheOldestMinutes(t *testing.T) {
	srv := startTestServer(t)
	srv.setDown(true)
	c, clock := startClient(t, srv.URL(), func(cfg *remote.Config) { cfg.MaxBufferedMinutes = 3 })
	for minute := range 5 {
		calls(c.Engine(), "orders", minute+1)
		clock.Advance(60_000)
		eventually(t, fmt.Sprintf("minute %d is buffered", minute), func() bool {
			st := c.State()
			return st.BufferedMinutes == min(minute+1, 3) && st.DroppedMinutes == int64(max(0, minute+1-3))
		})
	}
	srv.setDown(false)
	want := map[string]int64{"2026-11-24T04:02:00Z": 3, "2026-11-24T04:03:00Z": 4, "2026-11-24T04:04:00Z": 5}
	eventually(t, "the three newest minutes arrive", func() bool {
		return fmt.Sprint(srv.minutePasses("orders")) == fmt.Sprint(want) && c.State().BufferedMinutes == 0
	})
	if st := c.State(); st.DroppedMinutes != 2 || st.BufferedMinutes != 0 {
		t.Fatalf("state %+v, want 2 dropped and none left", st)
	}
}

func TestBadSnapshotIsRefusedWhole(t *testing.T) {
	tests := []struct {
		name string
		bad  string
	}{
		{"a value out of range", flowRule("orders-qps", "orders", -1)},
		{"a kind the engine does not know", `{"name": "pool", "kind": "isolation", "resource": "orders", "threshold": 8}`},
		{"not a rule", `"orders"`},
		{"another kind's field", `{"name": "x", "kind": "flow", "resource": "orders", "threshold": 1, "retryTimeoutMs": 5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startTestServer(t, flowRule("orders-qps", "orders", 1))
			c, _ := startClient(t, srv.URL(), nil)
			waitReady(t, c)
			if got := calls(c.Engine(), "orders", 2); got != 1 {
				t.Fatalf("%d of 2 calls passed a threshold of 1", got)
			}
			// A good rule beside the bad one is not loaded either.
			srv.setRules(flowRule("pay-qps", "pay", 0), tt.bad)
			eventually(t, "revision 2 is refused", func() bool {
				st := c.State()
				return st.LastError != nil && strings.Contains(st.LastError.Error(), "revision 2 refused")
			})
			if st := c.State(); st.Revision != 1 {
				t.Fatalf("revision %d in force, want 1", st.Revision)
			}
			if got := calls(c.Engine(), "orders", 1); got != 0 {
				t.Fatal("revision 1's rule no longer applies")
			}
			if got := calls(c.Engine(), "pay", 1); got != 1 {
				t.Fatal("the refused set's good rule applies")
			}
			// The client then waits for a revision after the refused one.
			eventually(t, `the client asks past "2"`, func() bool {
				var n int
				srv.read(func(s *testServer) { n = s.etagsAsked[`"2"`] })
				return n > 0
			})
			srv.setRules(flowRule("orders-qps", "orders", 100))
			eventually(t, "revision 3 is in force", func() bool { return c.State().Revision == 3 })
			if got := calls(c.Engine(), "orders", 1); got != 1 {
				t.Fatal("revision 3's threshold does not apply")
			}
		})
	}
}

func TestReportsNameTheInstanceAndItsLiveFigures(t *testing.T) {
	srv := startTestServer(t, flowRule("orders-qps", "orders", 100))
	c, _ := startClient(t, srv.URL(), nil)
	waitReady(t, c)
	calls(c.Engine(), "orders", 4)
	hostname, _ := os.Hostname()
	id := fmt.Sprintf("%s-%d", hostname, os.Getpid())
	want := instanceFigures{ID: id, App: "shop", Hostname: hostname, PID: os.Getpid(), Version: "1.2.3", RulesRevision: 1}
	eventually(t, "a report names the instance and orders' live figures", func() bool {
		var got instanceFigures
		var live []json.RawMessage
		srv.read(func(s *testServer) { got, live = s.instances[id], s.lastLive })
		return got == want && len(live) == 1 && strings.Contains(string(live[0]), `"resource":"orders","passQps":4`)
	})
}

// TestReportsCarryTheHotValues: an instance reports its hotspot rules'
// hottest values, for the server's panel to sum the fleet.
func TestReportsCarryTheHotValues(t *testing.T) {
	srv := startTestServer(t, `{"name": "per-user", "kind": "hotspot", "resource": "orders", "paramKey": "user", "threshold": 1000}`)
	c, _ := startClient(t, srv.URL(), nil)
	waitReady(t, c)
	for range 3 {
		if e, blk := c.Engine().Entry("orders", engine.WithParam("user", "alice")); blk == nil {
			e.Exit()
		}
	}
	eventually(t, "a report carries alice's passes", func() bool {
		var hot []json.RawMessage
		srv.read(func(s *testServer) { hot = s.lastHot })
		return len(hot) == 1 && strings.Contains(string(hot[0]), `"resource":"orders","rule":"per-user","paramKey":"user","approximate":false,"byPass":[{"value":"alice","pass":3,"block":0}]`)
	})
}

func TestCloseReportsTheCurrentMinute(t *testing.T) {
	srv := startTestServer(t)
	c, _ := startClient(t, srv.URL(), nil)
	made := calls(c.Engine(), "orders", 7)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := srv.passes("orders"); got != int64(made) {
		t.Fatalf("server counted %d passes, want the %d made before Close", got, made)
	}
	srv.checkNoMismatch()
}

func TestWrongTokenIsAnError(t *testing.T) {
	srv := startTestServer(t)
	c, _ := startClient(t, srv.URL(), func(cfg *remote.Config) { cfg.Token = "slc_wrong" })
	eventually(t, "the 401 is recorded", func() bool {
		err := c.State().LastError
		return err != nil && strings.Contains(err.Error(), "401") && strings.Contains(err.Error(), "a valid token is required")
	})
	st := c.State()
	if st.HasRules {
		t.Fatalf("state %+v: rules in force without the server's answer", st)
	}
	var refused *remote.CredentialsError
	if !st.CredentialsRefused || !errors.As(st.LastError, &refused) || refused.Status != http.StatusUnauthorized {
		t.Fatalf("state %+v: want the token's refusal told apart from a network error", st)
	}
}

func TestNewRefusesABadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  remote.Config
		want string
	}{
		{"no server", remote.Config{App: "shop"}, "ServerURL"},
		{"not http", remote.Config{ServerURL: "ftp://x", App: "shop"}, "ServerURL"},
		{"no app", remote.Config{ServerURL: "http://x"}, "App"},
		{"bad app", remote.Config{ServerURL: "http://x", App: "Shop!"}, "App"},
		{"long poll", remote.Config{ServerURL: "http://x", App: "shop", PollWait: 61 * time.Second}, "PollWait"},
		{"slow reports", remote.Config{ServerURL: "http://x", App: "shop", ReportInterval: 2 * time.Minute}, "ReportInterval"},
		{"minutes held too long", remote.Config{ServerURL: "http://x", App: "shop", MinuteSpread: 51 * time.Second}, "MinuteSpread"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := remote.New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, %v; want an error naming %s", c, err, tt.want)
			}
		})
	}
}

func TestCloseWithTheServerAwayReturnsTheError(t *testing.T) {
	srv := startTestServer(t)
	c, _ := startClient(t, srv.URL(), nil)
	calls(c.Engine(), "orders", 3)
	srv.setDown(true)
	if err := c.Close(); err == nil {
		t.Fatal("Close reported the current minute to a server that is away")
	}
	if st := c.State(); st.BufferedMinutes != 1 {
		t.Fatalf("state %+v, want the unsent minute still counted as buffered", st)
	}
}

func TestUnsentMinutesOutliveARestart(t *testing.T) {
	srv := startTestServer(t)
	dir := t.TempDir()
	first, _ := startClient(t, srv.URL(), func(cfg *remote.Config) { cfg.CacheDir, cfg.InstanceID = dir, "shop-1" })
	made := calls(first.Engine(), "orders", 5)
	srv.setDown(true)
	if err := first.Close(); err == nil {
		t.Fatal("Close reported to a server that is away")
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "unsent-*.json")); len(files) != 1 {
		t.Fatalf("unsent files after Close: %v, want one", files)
	}

	srv.setDown(false)
	second, _ := startClient(t, srv.URL(), func(cfg *remote.Config) { cfg.CacheDir, cfg.InstanceID = dir, "shop-2" })
	made += calls(second.Engine(), "orders", 3)
	eventually(t, "the first instance's minutes arrive", func() bool { return srv.passes("orders") == 5 })
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if got := srv.passes("orders"); got != int64(made) {
		t.Fatalf("server counted %d passes, want all %d made by both processes", got, made)
	}
	srv.read(func(s *testServer) {
		if _, ok := s.instances["shop-1"]; !ok {
			t.Errorf("the unsent minutes were not reported as the instance that counted them: %v", s.instances)
		}
	})
	if files, _ := filepath.Glob(filepath.Join(dir, "unsent-*.json")); len(files) != 0 {
		t.Fatalf("unsent files left after they were reported: %v", files)
	}
	srv.checkNoMismatch()
}

// manualNow is a Config.Now that only moves when told to.
type manualNow struct{ at atomic.Int64 }

func (m *manualNow) now() time.Time { return time.Unix(0, m.at.Load()).UTC() }

// TestStateTimesComeFromNow: the State's times are Config.Now's, not the
// wall clock's.
func TestStateTimesComeFromNow(t *testing.T) {
	var clock manualNow
	at := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	clock.at.Store(at.UnixNano())
	srv := startTestServer(t, flowRule("orders-qps", "orders", 2))
	c, _ := startClient(t, srv.URL(), func(cfg *remote.Config) { cfg.Now = clock.now })
	waitReady(t, c)
	calls(c.Engine(), "orders", 1)
	eventually(t, "a report arrives", func() bool { return !c.State().LastReport.IsZero() })
	if st := c.State(); !st.LastSync.Equal(at) || !st.LastReport.Equal(at) {
		t.Errorf("LastSync %v, LastReport %v; want both %v, Now's time", st.LastSync, st.LastReport, at)
	}

	later := at.Add(time.Hour)
	clock.at.Store(later.UnixNano())
	srv.setDown(true)
	eventually(t, "the server's absence is an error", func() bool { return c.State().LastError != nil })
	if st := c.State(); !st.LastErrorAt.Equal(later) {
		t.Errorf("LastErrorAt %v, want %v, Now's time", st.LastErrorAt, later)
	}
}
