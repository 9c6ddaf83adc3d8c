package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/servertest"
)

// runMainEnv, set to 1, makes the test binary run the service (main, on
// the arguments it was started with) instead of the tests, so that a test
// runs instances as real processes.
const runMainEnv = "SLUICE_EXAMPLE_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fleetServer is a Sluice server on a real listener and SQLite file, in
// the test's process, that can be stopped and started again on the same
// address and file.
type fleetServer struct {
	t      *testing.T
	addr   string
	dbPath string
	node   *servertest.Node
}

func startFleetServer(t *testing.T) *fleetServer {
	t.Helper()
	s := &fleetServer{t: t, addr: "127.0.0.1:0", dbPath: filepath.Join(t.TempDir(), "sluice.db")}
	s.start()
	return s
}

func (s *fleetServer) start() {
	s.t.Helper()
	s.node = servertest.Start(s.t, func(env servertest.Env) (servertest.Server, error) {
		return server.New(context.Background(), server.Config{
			Engine: env.Engine, Store: env.Store, Logger: env.Logger,
			BootstrapToken: servertest.AdminToken, PasswordCost: bcrypt.MinCost,
		})
	}, servertest.Addr(s.addr), servertest.DBPath(s.dbPath), servertest.DiscardLogs())
	s.addr = s.node.Addr
}

func (s *fleetServer) url() string { return "http://" + s.addr }

// do sends an admin's request and decodes a 2xx answer into out.
func (s *fleetServer) do(method, path string, body, out any) {
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

// instanceToken creates an API token of role instance.
func (s *fleetServer) instanceToken() string {
	s.t.Helper()
	var created struct{ Token string }
	s.do(http.MethodPost, "/api/v1/tokens", map[string]any{"name": "fleet", "role": "instance"}, &created)
	return created.Token
}

// instance is the example service running as a process of its own.
type instance struct {
	t        *testing.T
	id       string
	args     []string
	cmd      *exec.Cmd
	base     string
	stderr   *servertest.SyncBuffer
	exited   chan struct{}
	waitErr  error
	cacheDir string
}

var servingAddr = regexp.MustCompile(`msg=serving addr=(\S+)`)

// startInstance runs the service as instance id of app shop against the
// server at serverURL, with its cache in cacheDir.
func startInstance(t *testing.T, id, serverURL, token, cacheDir string) *instance {
	t.Helper()
	in := &instance{t: t, id: id, cacheDir: cacheDir, args: []string{
		"-addr", "127.0.0.1:0", "-server", serverURL, "-token", token, "-app", "shop",
		"-cache-dir", cacheDir, "-instance-id", id,
	}}
	in.start()
	return in
}

func (in *instance) start() {
	in.t.Helper()
	in.cmd = exec.Command(os.Args[0], in.args...)
	in.cmd.Env = append(os.Environ(), runMainEnv+"=1")
	in.stderr = &servertest.SyncBuffer{}
	in.cmd.Stderr = in.stderr
	in.exited = make(chan struct{})
	if err := in.cmd.Start(); err != nil {
		in.t.Fatal(err)
	}
	go func() {
		in.waitErr = in.cmd.Wait()
		close(in.exited)
	}()
	in.t.Cleanup(func() { in.stop() })
	servertest.WaitUntil(in.t, "instance "+in.id+" serves", 20*time.Second, func() bool {
		select {
		case <-in.exited:
			in.t.Fatalf("instance %s exited: %v\n%s", in.id, in.waitErr, in.stderr.String())
		default:
		}
		m := servingAddr.FindStringSubmatch(in.stderr.String())
		if m != nil {
			in.base = "http://" + m[1]
		}
		return m != nil
	})
}

// stop sends SIGTERM and waits for the process: the service closes its
// client, which posts the minute in progress.
func (in *instance) stop() {
	in.t.Helper()
	select {
	case <-in.exited:
		return
	default:
	}
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		in.t.Fatal(err)
	}
	select {
	case <-in.exited:
	case <-time.After(20 * time.Second):
		in.cmd.Process.Kill()
		in.t.Fatalf("instance %s did not stop on SIGTERM\n%s", in.id, in.stderr.String())
	}
}

// call sends a request to the service and returns its status.
func (in *instance) call(method, path string) int {
	in.t.Helper()
	req, err := http.NewRequest(method, in.base+path, nil)
	if err != nil {
		in.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatalf("instance %s: %v", in.id, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// state reads the service's /sluice/state.
func (in *instance) state() (s struct {
	Revision    int64
	HasRules    bool
	FromCache   bool
	LastError   string
	LastErrorAt *time.Time
}) {
	in.t.Helper()
	resp, err := http.Get(in.base + "/sluice/state")
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		in.t.Fatal(err)
	}
	return s
}

// TestFleetEnforcesTheServersRules runs three instances against a server:
// a rule written on the server is in force in every instance, a deleted
// one stops applying, and the server lists the instances live.
func TestFleetEnforcesTheServersRules(t *testing.T) {
	srv := startFleetServer(t)
	token := srv.instanceToken()
	var fleet []*instance
	for i := range 3 {
		in := startInstance(t, fmt.Sprintf("shop-%d", i), srv.url(), token, t.TempDir())
		servertest.WaitUntil(t, in.id+" has the server's rules", 10*time.Second, func() bool { return in.state().HasRules })
		fleet = append(fleet, in)
	}
	for _, in := range fleet {
		if got := in.call(http.MethodPost, "/checkout"); got != http.StatusCreated {
			t.Fatalf("%s: POST /checkout = %d before any rule, want 201", in.id, got)
		}
	}

	var rule struct{ ID int64 }
	srv.do(http.MethodPost, "/api/v1/rules", map[string]any{
		"name": "no-checkout", "kind": "flow", "resource": "POST /checkout", "threshold": 0,
	}, &rule)
	for _, in := range fleet {
		servertest.WaitUntil(t, in.id+" blocks POST /checkout", 5*time.Second, func() bool {
			return in.call(http.MethodPost, "/checkout") == http.StatusTooManyRequests
		})
		if got := in.call(http.MethodGet, "/orders"); got != http.StatusOK {
			t.Errorf("%s: GET /orders = %d, want 200: the rule is on another resource", in.id, got)
		}
	}

	srv.do(http.MethodDelete, fmt.Sprintf("/api/v1/rules/%d", rule.ID), nil, nil)
	for _, in := range fleet {
		servertest.WaitUntil(t, in.id+" lets POST /checkout through again", 5*time.Second, func() bool {
			return in.call(http.MethodPost, "/checkout") == http.StatusCreated
		})
	}

	servertest.WaitUntil(t, "the server lists every instance live", 10*time.Second, func() bool {
		var listed struct {
			Items []struct{ ID, App, State string }
		}
		srv.do(http.MethodGet, "/api/v1/instances?app=shop", nil, &listed)
		live := 0
		for _, it := range listed.Items {
			if it.App == "shop" && it.State == "live" {
				live++
			}
		}
		return live == len(fleet)
	})
}

// TestFleetOutlivesTheServer stops the server for a while: the instances
// keep enforcing, one restarted meanwhile enforces its cached rules, and
// once the server is back every call they counted is in the history
// exactly once, those of the restarted one's first process included.
func TestFleetOutlivesTheServer(t *testing.T) {
	srv := startFleetServer(t)
	token := srv.instanceToken()
	srv.do(http.MethodPost, "/api/v1/rules", map[string]any{
		"name": "no-checkout", "kind": "flow", "resource": "POST /checkout", "threshold": 0,
	}, nil)
	counted := startInstance(t, "shop-counted", srv.url(), token, t.TempDir())
	restarted := startInstance(t, "shop-restarted", srv.url(), token, t.TempDir())
	for _, in := range []*instance{counted, restarted} {
		servertest.WaitUntil(t, in.id+" blocks POST /checkout", 10*time.Second, func() bool {
			return in.call(http.MethodPost, "/checkout") == http.StatusTooManyRequests
		})
	}
	from := time.Now().UTC().Truncate(time.Minute)
	calls := 0
	get := func(in *instance) {
		if got := in.call(http.MethodGet, "/orders"); got != http.StatusOK {
			t.Fatalf("%s: GET /orders = %d, want 200", in.id, got)
		}
		calls++
	}
	for range 25 {
		get(counted)
	}

	srv.node.Stop(t)
	for range 40 {
		get(counted)
	}
	for range 10 {
		get(restarted) // kept on disk by its Close, reported by the next process
	}
	if got := counted.call(http.MethodPost, "/checkout"); got != http.StatusTooManyRequests {
		t.Errorf("with the server away, POST /checkout = %d, want 429", got)
	}
	restarted.stop()
	restarted.args[len(restarted.args)-1] = "shop-restarted-again"
	restarted.start()
	if s := restarted.state(); !s.HasRules || !s.FromCache {
		t.Errorf("restarted without the server: state %+v, want the cached rules in force", s)
	}
	servertest.WaitUntil(t, "the restarted instance's failed sync, with its time", 10*time.Second, func() bool {
		s := restarted.state()
		return s.LastError != "" && s.LastErrorAt != nil && !s.LastErrorAt.IsZero()
	})
	if got := restarted.call(http.MethodPost, "/checkout"); got != http.StatusTooManyRequests {
		t.Errorf("restarted without the server, POST /checkout = %d, want 429 from the cached rules", got)
	}

	srv.start()
	for range 15 {
		get(counted)
	}
	counted.stop() // posts the minute in progress
	restarted.stop()
	path := "/api/v1/resources/" + url.PathEscape("GET /orders") + "/metrics?step=1m&from=" +
		from.Format(time.RFC3339) + "&to=" + time.Now().UTC().Add(time.Minute).Format(time.RFC3339)
	var history struct {
		Points []struct{ Pass int64 }
	}
	servertest.WaitUntil(t, "the history holds every call", 10*time.Second, func() bool {
		srv.do(http.MethodGet, path, nil, &history)
		var pass int64
		for _, p := range history.Points {
			pass += p.Pass
		}
		return pass == int64(calls)
	})
}

// TestExampleFlags covers the service's flag errors.
func TestExampleFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-traffic", "-1"}, "-traffic must not be negative"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-nope"}, "flag provided but not defined"},
	} {
		var stderr bytes.Buffer
		err := run(tc.args, &stderr)
		if err == nil || !strings.Contains(err.Error()+stderr.String(), tc.want) {
			t.Errorf("run(%q) = %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
