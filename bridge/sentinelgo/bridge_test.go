package sentinelgo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sentinel "github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/config"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/core/isolation"
	"github.com/alibaba/sentinel-golang/core/system"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/bridge/sentinelgo"
	"github.com/sluicehq/sluice/engine/remote"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/servertest"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sentinel-logs-")
	if err != nil {
		panic(err)
	}
	conf := config.NewDefaultConfig()
	conf.Sentinel.Log.Dir = dir
	if err := sentinel.InitWithConfig(conf); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sluice is a Sluice server on a real listener and SQLite file.
type sluice struct {
	t    *testing.T
	node *servertest.Node
}

func startSluice(t *testing.T) *sluice {
	t.Helper()
	clearRules(t)
	node := servertest.Start(t, func(env servertest.Env) (servertest.Server, error) {
		return server.New(context.Background(), server.Config{
			Engine: env.Engine, Store: env.Store, Logger: env.Logger,
			BootstrapToken: servertest.AdminToken, PasswordCost: bcrypt.MinCost,
		})
	}, servertest.DBPath(filepath.Join(t.TempDir(), "sluice.db")), servertest.DiscardLogs())
	return &sluice{t: t, node: node}
}

// clearRules leaves sentinel-golang, whose rules are the process's, with
// none, as a process starts: each test begins from there.
func clearRules(t *testing.T) {
	t.Helper()
	for _, err := range []error{flow.ClearRules(), isolation.ClearRules(), circuitbreaker.ClearRules(),
		hotspot.ClearRules(), system.ClearRules()} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (s *sluice) url() string { return "http://" + s.node.Addr }

// do sends an admin's request and decodes a 2xx answer into out.
func (s *sluice) do(method, path string, body, out any) {
	s.t.Helper()
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		reader = bytes.NewReader(b)
	}
	resp, raw := s.node.Do(s.t, method, path, reader)
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

// rule creates a rule and returns its id.
func (s *sluice) rule(body map[string]any) int64 {
	s.t.Helper()
	var created struct{ ID int64 }
	s.do(http.MethodPost, "/api/v1/rules", body, &created)
	return created.ID
}

// bridge starts a Bridge of app shop on the server at serverURL, closed
// at the test's end.
func bridge(t *testing.T, serverURL, token, cacheDir, id string, logger *slog.Logger) *sentinelgo.Bridge {
	t.Helper()
	b, err := sentinelgo.New(remote.Config{ServerURL: serverURL, Token: token, App: "shop", CacheDir: cacheDir,
		InstanceID: id, Logger: logger, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func (s *sluice) instanceToken() string {
	s.t.Helper()
	var created struct{ Token string }
	s.do(http.MethodPost, "/api/v1/tokens", map[string]any{"name": "bridge", "role": "instance"}, &created)
	return created.Token
}

// blocked calls resource through sentinel-golang once, as the service
// does, and reports whether it was blocked; with fail, the call fails.
func blocked(resource string, fail bool) bool {
	e, b := sentinel.Entry(resource, sentinel.WithTrafficType(base.Inbound))
	if b != nil {
		return true
	}
	if fail {
		sentinel.TraceError(e, errors.New("payment declined"))
	}
	e.Exit()
	return false
}

// TestSluiceRuleBlocksTheSentinelServiceAndItsMinutesAreReported writes a
// rule in Sluice: sentinel-golang blocks within a second, and lets the
// calls through again within a second of its delete; the service's
// minutes are in Sluice's history for its instance, which is listed.
func TestSluiceRuleBlocksTheSentinelServiceAndItsMinutesAreReported(t *testing.T) {
	srv := startSluice(t)
	b := bridge(t, srv.url(), srv.instanceToken(), "", "shop-1", nil)
	<-b.Ready()
	if blocked("checkout", false) {
		t.Fatal("checkout blocked before any rule")
	}

	id := srv.rule(map[string]any{"name": "no-checkout", "kind": "flow", "resource": "checkout", "threshold": 0})
	written := time.Now()
	servertest.WaitUntil(t, "sentinel-golang blocks checkout", time.Second, func() bool { return blocked("checkout", false) })
	t.Logf("blocked %v after the rule was written", time.Since(written))
	srv.do(http.MethodDelete, fmt.Sprintf("/api/v1/rules/%d", id), nil, nil)
	servertest.WaitUntil(t, "sentinel-golang lets checkout through", time.Second, func() bool { return !blocked("checkout", false) })

	from := time.Now().UTC().Truncate(time.Minute)
	for i := range 30 {
		if blocked("orders", i%3 == 0) {
			t.Fatal("orders blocked without a rule")
		}
	}
	servertest.WaitUntil(t, "the server lists the instance live", 5*time.Second, func() bool {
		var listed struct{ Items []struct{ ID, State string } }
		srv.do(http.MethodGet, "/api/v1/instances?app=shop", nil, &listed)
		return len(listed.Items) == 1 && listed.Items[0].ID == "shop-1" && listed.Items[0].State == "live"
	})
	if err := b.Close(); err != nil { // reports the minute in progress
		t.Fatal(err)
	}
	path := "/api/v1/resources/orders/metrics?step=1m&instance=shop-1&from=" + url.QueryEscape(from.Format(time.RFC3339)) +
		"&to=" + url.QueryEscape(time.Now().UTC().Add(time.Minute).Format(time.RFC3339))
	var history struct {
		Points []struct{ Pass, Block, Complete, Error int64 }
	}
	servertest.WaitUntil(t, "the history holds the service's calls", 10*time.Second, func() bool {
		srv.do(http.MethodGet, path, nil, &history)
		var pass, complete, failed int64
		for _, p := range history.Points {
			pass, complete, failed = pass+p.Pass, complete+p.Complete, failed+p.Error
		}
		return pass == 30 && complete == 30 && failed == 10
	})
}

// TestTheServiceKeepsItsRulesWithoutTheServer stops the server: the
// service keeps blocking, and a new Bridge on the same cache directory,
// with no server, puts the cached rules in force at Start.
func TestTheServiceKeepsItsRulesWithoutTheServer(t *testing.T) {
	srv := startSluice(t)
	srv.rule(map[string]any{"name": "no-checkout", "kind": "flow", "resource": "checkout", "threshold": 0})
	cache := t.TempDir()
	first := bridge(t, srv.url(), srv.instanceToken(), cache, "shop-1", nil)
	servertest.WaitUntil(t, "sentinel-golang blocks checkout", 5*time.Second, func() bool { return blocked("checkout", false) })

	srv.node.Stop(t)
	servertest.WaitUntil(t, "the bridge sees the server away", 10*time.Second, func() bool { return first.State().LastError != nil })
	if !blocked("checkout", false) {
		t.Fatal("checkout let through with the server away: the rules in force must stay")
	}
	first.Close()

	clearRules(t) // as a restarted process starts
	second := bridge(t, srv.url(), "", cache, "shop-2", nil)
	if s := second.State(); !s.HasRules || !s.FromCache {
		t.Fatalf("state after Start on the cache: %+v, want the cached rules in force", s)
	}
	if !blocked("checkout", false) {
		t.Fatal("checkout let through after a restart without the server: the cached rule must block it")
	}
}

// TestRulesSentinelCannotExpressAreListedAndLoggedOnce writes rules that
// sentinel-golang has no equivalent for next to one it has: the one is
// enforced, the others are in State with their reason and logged once,
// however many rule sets come after.
func TestRulesSentinelCannotExpressAreListedAndLoggedOnce(t *testing.T) {
	srv := startSluice(t)
	for _, r := range []map[string]any{
		{"name": "no-bots", "kind": "authority", "resource": "checkout", "strategy": "deny", "origins": []string{"bot"}},
		{"name": "mobile-only", "kind": "flow", "resource": "checkout", "threshold": 5, "limitApp": "mobile"},
		{"name": "trial", "kind": "flow", "resource": "search", "threshold": 0, "mode": "shadow"},
		{"name": "no-orders", "kind": "flow", "resource": "orders", "threshold": 0},
	} {
		srv.rule(r)
	}
	var logs servertest.SyncBuffer
	b := bridge(t, srv.url(), srv.instanceToken(), "", "shop-1", slog.New(slog.NewTextHandler(&logs, nil)))
	servertest.WaitUntil(t, "sentinel-golang blocks orders", 5*time.Second, func() bool { return blocked("orders", false) })
	if blocked("search", false) {
		t.Error("search blocked by a shadow rule")
	}

	want := map[string]string{"no-bots": "authority", "mobile-only": "limitApp mobile", "trial": "mode shadow"}
	check := func() {
		t.Helper()
		got := b.State().Unsupported
		if len(got) != len(want) {
			t.Fatalf("Unsupported = %+v, want %d rules", got, len(want))
		}
		for _, u := range got {
			if reason, ok := want[u.Name]; !ok || !strings.Contains(u.Reason, reason) {
				t.Errorf("Unsupported %+v: want the reason to say %q", u, reason)
			}
			if n := strings.Count(logs.String(), "rule="+u.Name+" "); n != 1 {
				t.Errorf("rule %s logged %d times, want once:\n%s", u.Name, n, logs.String())
			}
		}
	}
	check()

	srv.rule(map[string]any{"name": "no-search", "kind": "flow", "resource": "search", "threshold": 0})
	servertest.WaitUntil(t, "sentinel-golang blocks search", 5*time.Second, func() bool { return blocked("search", false) })
	check()
}
