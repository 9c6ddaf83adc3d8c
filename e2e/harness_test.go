package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/cluster"
	"github.com/sluicehq/sluice/server/demo"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/server/webhook"
	"github.com/sluicehq/sluice/store"
)

const (
	// adminPassword is the password of the first user, admin.
	adminPassword = "e2e-admin-password"
	// apiToken is an admin API token, for the tests' own API calls.
	apiToken = servertest.AdminToken
	// waitTimeout bounds every wait for the page.
	waitTimeout = 15 * time.Second
	// pollInterval is how often a wait looks at the page again.
	pollInterval = 50 * time.Millisecond
	// timeoutScale is what shortTimeouts multiplies the page's own
	// timeouts by: a request's 10 s become 3, a health probe's 3 s 0.9.
	timeoutScale = 0.3
)

// node is a Sluice server for one test: a real listener on 127.0.0.1 and a
// real SQLite file in the test's temporary directory. It can be stopped and
// started again on the same address and file, as a restarted process, and
// its connections held, as a hung one.
type node struct {
	t      *testing.T
	cfg    nodeConfig
	url    string
	addr   string
	dbPath string
	gate   *gate
	served *servertest.Node
	// engine and store are the running server's; a restart brings new ones.
	engine *engine.Engine
	store  *store.Store
}

// nodeConfig changes how a node starts.
type nodeConfig struct {
	// demo runs the server with the demo (package demo).
	demo bool
	// seed writes to the store before the server opens it the first time.
	seed func(t *testing.T, st *store.Store)
	// redisURL, when set, gives the server a cluster count in that Redis
	// (sluice --redis).
	redisURL string
	// webhooks lets webhooks reach a receiver on loopback, polls and
	// retries them within milliseconds, and pauses an endpoint at its
	// first failure.
	webhooks bool
}

func startNode(t *testing.T, cfg nodeConfig) *node {
	t.Helper()
	n := &node{t: t, cfg: cfg, addr: "127.0.0.1:0", dbPath: filepath.Join(t.TempDir(), "sluice.db"), gate: newGate()}
	n.start()
	n.url = "http://" + n.addr
	return n
}

// start serves on the node's address: a new one the first time, the same
// one after stop, as a restarted process would.
func (n *node) start() {
	n.t.Helper()
	first := n.served == nil
	feed := server.NewBreakerFeed()
	engineOpts := engine.Options{OnBreakerStateChange: feed.Notify}
	if n.cfg.redisURL != "" {
		counter, err := cluster.New(cluster.Options{URL: n.cfg.redisURL, Timeout: 2 * time.Second}) // a loaded machine's Redis may miss the 50 ms default
		if err != nil {
			n.t.Fatal(err)
		}
		n.t.Cleanup(func() { _ = counter.Close() })
		engineOpts.Cluster = counter
	}
	n.served = servertest.Start(n.t, func(env servertest.Env) (servertest.Server, error) {
		if first && n.cfg.seed != nil {
			n.cfg.seed(n.t, env.Store)
		}
		cfg := server.Config{
			Engine: env.Engine, Store: env.Store, Logger: env.Logger, BreakerFeed: feed,
			AdminPassword: adminPassword, BootstrapToken: apiToken, PasswordCost: bcrypt.MinCost,
			Cluster: engineOpts.Cluster,
		}
		if n.cfg.webhooks {
			cfg.WebhookAllowPrivate = true
			cfg.Webhook = webhook.Options{PollInterval: 20 * time.Millisecond, BackoffBase: 5 * time.Millisecond, PauseAfterFailures: 1, PauseAfter: time.Nanosecond}
		}
		srv, err := server.New(context.Background(), cfg)
		if err != nil {
			return nil, err
		}
		gated := gatedServer{Server: srv, gate: n.gate}
		if n.cfg.demo {
			if gated.traffic, err = demo.Start(context.Background(), srv.Rules(), env.Engine, env.Logger); err != nil {
				return nil, fmt.Errorf("demo.Start: %w", err)
			}
		}
		return gated, nil
	}, servertest.Addr(n.addr), servertest.DBPath(n.dbPath),
		servertest.EngineOptions(engineOpts))
	// Registered after the server's stop, so run before it: a server whose
	// writes are held could not finish its requests and shut down.
	n.t.Cleanup(n.gate.release)
	n.addr, n.engine, n.store = n.served.Addr, n.served.Engine, n.served.Store
}

// stop shuts the server down: its address refuses connections until start.
func (n *node) stop() {
	n.t.Helper()
	n.served.Stop(n.t)
}

// gatedServer is the server a node runs: its connections pass through the
// node's gate, and its demo traffic, if any, stops before it shuts down, so
// that the final flush counts every call.
type gatedServer struct {
	*server.Server
	gate    *gate
	traffic *demo.Traffic // nil without the demo
}

func (s gatedServer) Serve(ln net.Listener) error {
	return s.Server.Serve(gatedListener{Listener: ln, gate: s.gate})
}

func (s gatedServer) Shutdown(ctx context.Context) error {
	s.traffic.Close()
	return s.Server.Shutdown(ctx)
}

// gate holds the writes of every connection of a node while it is held:
// the server then looks hung to the browser, as under SIGSTOP — its
// connections open, its requests read and never answered.
type gate struct {
	mu   sync.Mutex
	open chan struct{} // closed while writes pass
	// trigger, when set, holds the gate as soon as a request holding it is
	// read: that request's answer is held, those before it are not.
	trigger []byte
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

// hold stops every write until release.
func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default: // already held
	}
}

// holdAt holds the gate once a request whose bytes hold s ("POST
// /api/v1/webhooks/1/test") is read, for a write that must go out after a
// read the page makes just before it.
func (g *gate) holdAt(s string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.trigger = []byte(s)
}

// read holds the gate if p holds its trigger.
func (g *gate) read(p []byte) {
	g.mu.Lock()
	hit := g.trigger != nil && bytes.Contains(p, g.trigger)
	if hit {
		g.trigger = nil
	}
	g.mu.Unlock()
	if hit {
		g.hold()
	}
}

// release lets the writes go on.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *gate) wait() {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	<-open
}

type gatedListener struct {
	net.Listener
	gate *gate
}

func (l gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return gatedConn{Conn: c, gate: l.gate}, nil
}

type gatedConn struct {
	net.Conn
	gate *gate
}

func (c gatedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.gate.read(p[:n])
	return n, err
}

func (c gatedConn) Write(p []byte) (int, error) {
	c.gate.wait()
	return c.Conn.Write(p)
}

var client = &http.Client{Timeout: 10 * time.Second}

// call sends one API request with the admin token; body is JSON-encoded
// unless it is a string. It answers the status and the body.
func (n *node) call(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	return n.callAs(t, apiToken, method, path, body)
}

// callAs sends one API request as call does, with the API token given.
func (n *node) callAs(t *testing.T, token, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, n.url+"/api/v1"+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// createRule creates the rule body describes through the API, failing t
// unless it is created.
func (n *node) createRule(t *testing.T, body string) {
	t.Helper()
	if status, data := n.call(t, http.MethodPost, "/rules", body); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, data)
	}
}

// rule reads one rule through the API.
func (n *node) rule(t *testing.T, id int64) rules.APIRule {
	t.Helper()
	status, body := n.call(t, http.MethodGet, fmt.Sprintf("/rules/%d", id), nil)
	if status != http.StatusOK {
		t.Fatalf("GET rule %d: %d %s", id, status, body)
	}
	var r rules.APIRule
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// revisions reads a rule's history through the API, newest first.
func (n *node) revisions(t *testing.T, id int64) []server.RuleRevision {
	t.Helper()
	status, body := n.call(t, http.MethodGet, fmt.Sprintf("/rules/%d/revisions", id), nil)
	if status != http.StatusOK {
		t.Fatalf("GET revisions of rule %d: %d %s", id, status, body)
	}
	var list server.RevisionList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// tab is one browser tab of a test.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
	name string
}

// newTab opens a tab in a browser context of its own (its own cookies) on
// the node at base.
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	return openTab(t, ctx, cancel, base, "tab1")
}

// another opens a second tab in the same browser context: the same
// session, as a person's second tab would have.
func (tb *tab) another() *tab {
	tb.t.Helper()
	ctx, cancel := chromedp.NewContext(tb.ctx)
	return openTab(tb.t, ctx, cancel, tb.base, tb.name+"b")
}

// openTab starts the tab, fails the test on any script error or console
// error the page logs, and saves a screenshot if the test fails.
func openTab(t *testing.T, ctx context.Context, cancel context.CancelFunc, base, name string) *tab {
	t.Helper()
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	tb := &tab{t: t, ctx: ctx, base: base, name: name}

	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(ctx)
	go func() {
		for msg, err := range messages {
			if err != nil {
				return
			}
			// A refused request is logged by the browser as a network
			// error: the console expects those (401, 412, 422) and shows
			// them itself.
			if msg.Type == chromedp.ConsoleException || msg.Type == chromedp.ConsoleError && msg.Source != "network" {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s %s (%s:%d)", msg.Type, msg.Text, msg.URL, msg.Line))
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			tb.saveFailure()
		}
	})
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("%s: the page logged %s", name, p)
		}
	})
	return tb
}

// saveFailure saves a screenshot of the tab in a directory of the test's
// own that is kept, and logs where.
func (tb *tab) saveFailure() {
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Logf("%s: no failure screenshot: %v", tb.name, err)
		return
	}
	safe := strings.NewReplacer("/", "_", " ", "_").Replace(tb.t.Name())
	dir, err := os.MkdirTemp("", "sluice-e2e-"+safe+"-")
	if err == nil {
		path := filepath.Join(dir, tb.name+".png")
		if err = os.WriteFile(path, png, 0o644); err == nil {
			tb.t.Logf("%s: screenshot of the failure: %s", tb.name, path)
			return
		}
	}
	tb.t.Logf("%s: could not save the failure screenshot: %v", tb.name, err)
}

// do runs browser actions, each run bounded by waitTimeout.
func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %s: %v", tb.name, what, err)
	}
}

// eval evaluates a JavaScript expression in the page and decodes its value.
func eval[T any](tb *tab, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// js quotes s as a JavaScript string.
func js(s string) string {
	data, _ := json.Marshal(s) // a string always encodes
	return string(data)
}

// waitFor polls the page until the JavaScript expression is true, or fails
// the test after waitTimeout. (chromedp.Poll builds its predicate with new
// Function, which the console's Content-Security-Policy forbids.)
func (tb *tab) waitFor(what, expr string) {
	tb.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ok, err := eval[bool](tb, "Boolean("+expr+")")
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("%s: waited %v for %s (%s); last error: %v", tb.name, waitTimeout, what, expr, err)
		}
		<-tick.C
	}
}

// waitText waits until the element sel exists and its text contains want.
func (tb *tab) waitText(sel, want string) {
	tb.t.Helper()
	tb.waitFor(fmt.Sprintf("%s to read %q", sel, want),
		fmt.Sprintf("(document.querySelector(%s)?.textContent ?? '').includes(%s)", js(sel), js(want)))
}

// text answers the text of the element sel.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	s, err := eval[string](tb, fmt.Sprintf("document.querySelector(%s)?.textContent ?? ''", js(sel)))
	if err != nil {
		tb.t.Fatalf("%s: text of %s: %v", tb.name, sel, err)
	}
	return s
}

// value answers the value of the form control sel.
func (tb *tab) value(sel string) string {
	tb.t.Helper()
	s, err := eval[string](tb, fmt.Sprintf("document.querySelector(%s)?.value ?? ''", js(sel)))
	if err != nil {
		tb.t.Fatalf("%s: value of %s: %v", tb.name, sel, err)
	}
	return s
}

// visit goes to a console route (#/rules) and waits for its heading.
func (tb *tab) visit(route, heading string) {
	tb.t.Helper()
	if _, err := eval[string](tb, "location.hash = "+js("#"+route)); err != nil {
		tb.t.Fatalf("%s: go to %s: %v", tb.name, route, err)
	}
	tb.waitText("main h1", heading)
}

// historyDrawn waits until a resource page has drawn its history: the
// chart it adds moves the rules below it down, and a click aimed at a
// rule's control before then can land where the control was.
func (tb *tab) historyDrawn() {
	tb.t.Helper()
	tb.waitText("#history-note", "steps of")
}

// fill replaces the value of the form control sel, as typing would.
func (tb *tab) fill(sel, value string) {
	tb.t.Helper()
	tb.do("fill "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	expr := fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		el.value = %s;
		el.dispatchEvent(new Event('input', {bubbles: true}));
		el.dispatchEvent(new Event('change', {bubbles: true}));
		return true;
	})()`, js(sel), js(value))
	if _, err := eval[bool](tb, expr); err != nil {
		tb.t.Fatalf("%s: fill %s: %v", tb.name, sel, err)
	}
}

// click clicks the visible element sel.
func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// shortTimeouts shortens the page's own timeouts (AbortSignal.timeout: a
// request's, a health probe's) by timeoutScale in every page the tab loads
// from then on; call it before login. A test that hangs the server waits
// out each timeout it provokes, and what it checks is what the console
// does once one has passed, not how long it waited: the console's
// messages still name its own timeout ("did not answer within 10 s").
func (tb *tab) shortTimeouts() {
	tb.t.Helper()
	script := fmt.Sprintf(`{
		const timeout = AbortSignal.timeout.bind(AbortSignal);
		AbortSignal.timeout = (ms) => timeout(ms * %v);
	}`, timeoutScale)
	tb.do("shorten the page's timeouts", chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: script})
		return err
	}))
}

// login opens the console and logs in as admin.
func (tb *tab) login() {
	tb.t.Helper()
	tb.loginAs("admin", adminPassword)
}

// loginAs opens the console and logs in as username.
func (tb *tab) loginAs(username, password string) {
	tb.t.Helper()
	tb.do("open the login page", chromedp.Navigate(tb.base+"/#/login"), chromedp.WaitVisible(chromedp.CSS("#login-username")))
	tb.fill("#login-username", username)
	tb.fill("#login-password", password)
	tb.click("#login-form button[type=submit]")
	tb.waitText("main h1", "Overview")
}

// screenshot saves the page as docs/screenshots/name.png when the tests
// run with -update-screenshots.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	if !*updateScreenshots {
		return
	}
	// Nothing blinks, and no passing message hides the page.
	if _, err := eval[bool](tb, "document.activeElement?.blur(), document.querySelector('#toast').hidden = true, true"); err != nil {
		tb.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join("..", "docs", "screenshots", name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("wrote %s", path)
}

// colorScheme makes the tab's prefers-color-scheme light or dark, as the
// person's system setting would.
func (tb *tab) colorScheme(scheme string) {
	tb.t.Helper()
	tb.do("prefer the "+scheme+" colour scheme", chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	}))
}
