package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/server/webhook"
	"github.com/sluicehq/sluice/store"
)

// receiver is a webhook receiver on loopback: it keeps every request,
// and answers the status status holds (200 when 0).
type receiver struct {
	*httptest.Server
	status atomic.Int32
	mu     sync.Mutex
	got    []received
}

// received is one request a receiver got, with the status it answered.
type received struct {
	id, eventType string
	header        http.Header
	body          []byte
	status        int
}

func startReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ev struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(body, &ev)
		status := int(r.status.Load())
		if status == 0 {
			status = http.StatusOK
		}
		r.mu.Lock()
		r.got = append(r.got, received{id: req.Header.Get("webhook-id"), eventType: ev.Type, header: req.Header.Clone(), body: body, status: status})
		r.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte("receiver says " + http.StatusText(status)))
	}))
	t.Cleanup(r.Close)
	return r
}

// requests returns what the receiver got so far.
func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// delivered returns, by event id, how many requests of it were answered
// 2xx.
func (r *receiver) delivered() map[string]int {
	out := map[string]int{}
	for _, got := range r.requests() {
		if got.status < 300 {
			out[got.id]++
		}
	}
	return out
}

// fastWebhooks is a server configuration whose worker polls and retries
// within milliseconds, and reaches a loopback receiver.
func fastWebhooks(cfg *Config) {
	cfg.WebhookAllowPrivate = true
	cfg.Webhook = webhook.Options{PollInterval: 20 * time.Millisecond, BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond}
}

// addWebhook registers url for events as the admin and returns it with
// its secret.
func addWebhook(t *testing.T, n *servertest.Node, body string) NewWebhook {
	t.Helper()
	resp, data := n.Do(t, http.MethodPost, "/api/v1/webhooks", strings.NewReader(body))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create webhook: %d %s", resp.StatusCode, data)
	}
	var w NewWebhook
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// mustDo sends a request as the admin and fails unless it answers want.
func mustDo(t *testing.T, n *servertest.Node, method, path, body string, want int) []byte {
	t.Helper()
	resp, data := n.Do(t, method, path, strings.NewReader(body))
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, data, want)
	}
	return data
}

// TestWebhooksDeliverEveryEventSigned registers a loopback receiver for
// every event, makes each kind happen (every rule write, breaker
// transitions and cluster state changes as the engine reports them, a
// test event) and checks that each arrives once, its signature valid by
// the Standard Webhooks library's verifier, its webhook-id the event's.
func TestWebhooksDeliverEveryEventSigned(t *testing.T) {
	t.Parallel()
	feed, clusterFeed := NewBreakerFeed(), NewClusterFeed()
	n := startServer(t, func(cfg *Config) { fastWebhooks(cfg); cfg.BreakerFeed, cfg.ClusterFeed = feed, clusterFeed }, nil)
	recv := startReceiver(t)
	hook := addWebhook(t, n.Node, fmt.Sprintf(`{"url":%q,"events":["*"]}`, recv.URL))
	if !strings.HasPrefix(hook.Secret, "whsec_") || hook.State != "active" {
		t.Fatalf("created %+v", hook)
	}

	var r rules.APIRule
	if err := json.Unmarshal(mustDo(t, n.Node, http.MethodPost, "/api/v1/rules", `{"kind":"flow","resource":"orders","threshold":5}`, http.StatusCreated), &r); err != nil {
		t.Fatal(err)
	}
	rulePath := fmt.Sprintf("/api/v1/rules/%d", r.ID)
	mustDo(t, n.Node, http.MethodPatch, rulePath, `{"threshold":6}`, http.StatusOK)
	mustDo(t, n.Node, http.MethodPost, rulePath+"/rollback?toVersion=1", "", http.StatusOK)
	mustDo(t, n.Node, http.MethodDelete, rulePath, "", http.StatusNoContent)
	mustDo(t, n.Node, http.MethodPost, "/api/v1/rules/apply", `{"rules":[{"name":"applied","kind":"flow","resource":"pay","threshold":1}]}`, http.StatusOK)
	for _, to := range []engine.BreakerState{engine.BreakerOpen, engine.BreakerHalfOpen, engine.BreakerClosed} {
		feed.Notify(engine.BreakerStateChange{Rule: "pay-errors", Resource: "pay", From: engine.BreakerClosed, To: to, AtMs: time.Now().UnixMilli()})
	}
	clusterFeed.Notify(engine.ClusterStateChange{State: engine.ClusterFallingBack, Err: errors.New("redis: connection refused"), AtMs: time.Now().UnixMilli()})
	clusterFeed.Notify(engine.ClusterStateChange{State: engine.ClusterShared, AtMs: time.Now().UnixMilli()})
	var test WebhookTest
	if err := json.Unmarshal(mustDo(t, n.Node, http.MethodPost, fmt.Sprintf("/api/v1/webhooks/%d/test", hook.ID), "", http.StatusAccepted), &test); err != nil {
		t.Fatal(err)
	}

	want := []string{
		rules.EventRuleCreated, rules.EventRuleUpdated, rules.EventRuleRolledBack, rules.EventRuleDeleted, rules.EventRulesApplied,
		eventBreakerOpened, eventBreakerHalfOpen, eventBreakerClosed, eventClusterFallbackEntered, eventClusterFallbackLeft, eventTest,
	}
	servertest.WaitUntil(t, "every event delivered", 10*time.Second, func() bool { return len(recv.requests()) >= len(want) })
	verifier, err := standardwebhooks.NewWebhook(hook.Secret)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	ids := map[string]bool{}
	for _, got := range recv.requests() {
		if err := verifier.Verify(got.body, got.header); err != nil {
			t.Errorf("%s (%s): the signature does not verify: %v", got.eventType, got.id, err)
		}
		if !strings.HasPrefix(got.id, "msg_") || ids[got.id] {
			t.Errorf("webhook-id %q: want a msg_ id, once", got.id)
		}
		ids[got.id] = true
		types = append(types, got.eventType)
		if got.eventType == eventClusterFallbackEntered {
			var ev struct {
				Data ClusterEvent `json:"data"`
			}
			if err := json.Unmarshal(got.body, &ev); err != nil || ev.Data.State != "fallback" || ev.Data.Error != "redis: connection refused" {
				t.Errorf("cluster.fallbackEntered %s", got.body)
			}
		}
	}
	if !ids[test.EventID] {
		t.Errorf("the test event %s was not delivered", test.EventID)
	}
	slices.Sort(types)
	slices.Sort(want)
	if !slices.Equal(types, want) {
		t.Fatalf("delivered %v, want %v", types, want)
	}
}

// TestWebhooksRetryUntilTheReceiverAnswers has the receiver answer 500
// to the first attempts, then 200: the event is delivered later, once.
func TestWebhooksRetryUntilTheReceiverAnswers(t *testing.T) {
	t.Parallel()
	n := startServer(t, fastWebhooks, nil)
	recv := startReceiver(t)
	recv.status.Store(http.StatusInternalServerError)
	hook := addWebhook(t, n.Node, fmt.Sprintf(`{"url":%q,"events":["rule.created"]}`, recv.URL))
	mustDo(t, n.Node, http.MethodPost, "/api/v1/rules", `{"kind":"flow","resource":"orders","threshold":5}`, http.StatusCreated)
	servertest.WaitUntil(t, "three failed attempts", 10*time.Second, func() bool { return len(recv.requests()) >= 3 })
	recv.status.Store(http.StatusNoContent)
	deliveriesPath := fmt.Sprintf("/api/v1/webhooks/%d/deliveries", hook.ID)
	var list WebhookDeliveryList
	servertest.WaitUntil(t, "the delivery delivered", 10*time.Second, func() bool {
		list = WebhookDeliveryList{}
		if err := json.Unmarshal(mustDo(t, n.Node, http.MethodGet, deliveriesPath, "", http.StatusOK), &list); err != nil {
			t.Fatal(err)
		}
		return len(list.Items) == 1 && list.Items[0].State == store.DeliveryDelivered
	})
	d := list.Items[0]
	if d.Attempts < 4 || d.LastStatus != http.StatusNoContent || d.LastError != "" || d.EventType != rules.EventRuleCreated {
		t.Fatalf("delivery %+v", d)
	}
	delivered := recv.delivered()
	if len(delivered) != 1 || delivered[d.EventID] != 1 {
		t.Fatalf("delivered %v, want %s once", delivered, d.EventID)
	}
	for _, got := range recv.requests() {
		if got.id != d.EventID {
			t.Fatalf("a retry carried the id %s, not %s", got.id, d.EventID)
		}
	}
}

// TestWebhooksPauseAnEndpointThatKeepsFailing: after the configured run
// of failures the endpoint shows as paused with the reason, its pending
// delivery kept and not attempted; resumed, it is delivered.
func TestWebhooksPauseAnEndpointThatKeepsFailing(t *testing.T) {
	t.Parallel()
	n := startServer(t, func(cfg *Config) {
		fastWebhooks(cfg)
		cfg.Webhook.PauseAfterFailures, cfg.Webhook.PauseAfter = 3, time.Nanosecond
	}, nil)
	recv := startReceiver(t)
	recv.status.Store(http.StatusServiceUnavailable)
	hook := addWebhook(t, n.Node, fmt.Sprintf(`{"url":%q,"events":["rule.created"]}`, recv.URL))
	mustDo(t, n.Node, http.MethodPost, "/api/v1/rules", `{"kind":"flow","resource":"orders","threshold":5}`, http.StatusCreated)
	hookPath := fmt.Sprintf("/api/v1/webhooks/%d", hook.ID)
	var got Webhook
	servertest.WaitUntil(t, "the endpoint paused", 10*time.Second, func() bool {
		if err := json.Unmarshal(mustDo(t, n.Node, http.MethodGet, hookPath, "", http.StatusOK), &got); err != nil {
			t.Fatal(err)
		}
		return got.State == "paused"
	})
	if !strings.Contains(got.PausedReason, "3 attempts in a row failed") || !strings.Contains(got.PausedReason, "HTTP 503") || got.PausedAt == nil {
		t.Fatalf("paused %+v", got)
	}
	attempts := len(recv.requests())
	if attempts != 3 {
		t.Fatalf("%d attempts before the pause, want 3", attempts)
	}
	var list WebhookDeliveryList
	if err := json.Unmarshal(mustDo(t, n.Node, http.MethodGet, hookPath+"/deliveries", "", http.StatusOK), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].State != store.DeliveryPending {
		t.Fatalf("deliveries of the paused endpoint %+v, want its one pending", list.Items)
	}
	recv.status.Store(http.StatusOK)
	got = Webhook{}
	if err := json.Unmarshal(mustDo(t, n.Node, http.MethodPost, hookPath+"/resume", "", http.StatusOK), &got); err != nil {
		t.Fatal(err)
	}
	if got.State != "active" || got.PausedReason != "" || got.Failures != 0 {
		t.Fatalf("resumed %+v", got)
	}
	servertest.WaitUntil(t, "the kept delivery delivered after resume", 10*time.Second, func() bool { return len(recv.delivered()) == 1 })
}

// TestWebhookURLsRefusedByDefault: without --webhook-allow-private an
// endpoint on the metadata address, loopback, a private range, or a host
// that resolves to loopback is refused (422 naming url), as are URLs of
// another scheme or with a password; and an endpoint whose URL reaches
// loopback all the same (as DNS rebinding would) is refused when the
// delivery connects, the receiver never reached.
func TestWebhookURLsRefusedByDefault(t *testing.T) {
	t.Parallel()
	n := startServer(t, func(cfg *Config) {
		cfg.Webhook = webhook.Options{PollInterval: 20 * time.Millisecond, BackoffBase: time.Hour}
	}, nil)
	for _, url := range []string{
		"http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:8080/hook", "https://10.0.0.1/hook",
		"http://[::1]/hook", "http://localhost/hook", "http://100.64.0.1/", "http://[fe80::1]/", "http://192.168.1.1/",
		"http://[::ffff:127.0.0.1]/", "http://0.0.0.0/", "ftp://203.0.113.10/", "http://user:pw@203.0.113.10/", "/relative",
	} {
		resp, data := n.Do(t, http.MethodPost, "/api/v1/webhooks", strings.NewReader(fmt.Sprintf(`{"url":%q,"events":["*"]}`, url)))
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %s, want 422", url, resp.StatusCode, data)
			continue
		}
		if env := decodeEnvelope(t, resp, data); len(env.Details) != 1 || env.Details[0].Field != "url" {
			t.Errorf("%s: details %+v, want url", url, env.Details)
		}
	}
	mustDo(t, n.Node, http.MethodPost, "/api/v1/webhooks", `{"url":"https://203.0.113.10/hook","events":["*"],"enabled":false}`, http.StatusCreated)

	recv := startReceiver(t)
	rebound := store.WebhookEndpoint{URL: recv.URL, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Events: []string{"*"}, Enabled: true}
	if err := n.Store.CreateWebhook(t.Context(), &rebound); err != nil {
		t.Fatal(err)
	}
	mustDo(t, n.Node, http.MethodPost, fmt.Sprintf("/api/v1/webhooks/%d/test", rebound.ID), "", http.StatusAccepted)
	var list WebhookDeliveryList
	servertest.WaitUntil(t, "the delivery attempted", 10*time.Second, func() bool {
		data := mustDo(t, n.Node, http.MethodGet, fmt.Sprintf("/api/v1/webhooks/%d/deliveries", rebound.ID), "", http.StatusOK)
		list = WebhookDeliveryList{}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		return len(list.Items) == 1 && list.Items[0].Attempts == 1
	})
	if !strings.Contains(list.Items[0].LastError, "loopback") || len(recv.requests()) != 0 {
		t.Fatalf("delivery %+v, receiver got %d; want refused at connection", list.Items[0], len(recv.requests()))
	}
}

// TestWebhooksSurviveARestart writes a change whose event the first
// server never delivers (its worker does not poll again before it
// stops), then opens a second server on the same database: the event is
// delivered by it.
func TestWebhooksSurviveARestart(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t)
	dbPath := filepath.Join(t.TempDir(), "sluice.db")
	first := startServer(t, func(cfg *Config) {
		cfg.WebhookAllowPrivate = true
		cfg.Webhook = webhook.Options{PollInterval: time.Hour}
	}, nil, servertest.DBPath(dbPath))
	addWebhook(t, first.Node, fmt.Sprintf(`{"url":%q,"events":["*"]}`, recv.URL))
	mustDo(t, first.Node, http.MethodPost, "/api/v1/rules", `{"kind":"flow","resource":"orders","threshold":5}`, http.StatusCreated)
	first.Stop(t)
	if got := recv.requests(); len(got) != 0 {
		t.Fatalf("the first server delivered %d events; the test needs it not to", len(got))
	}
	startServer(t, fastWebhooks, nil, servertest.DBPath(dbPath))
	servertest.WaitUntil(t, "the event delivered by the restarted server", 10*time.Second, func() bool { return len(recv.delivered()) == 1 })
	if got := recv.requests(); got[0].eventType != rules.EventRuleCreated {
		t.Fatalf("delivered %s", got[0].eventType)
	}
}

// TestWebhooksOnReplicasDeliverOnce runs two servers on one PostgreSQL
// database, each with a delivery worker, writes rules on both, and
// checks that every event reached the receiver once, not once per
// replica.
func TestWebhooksOnReplicasDeliverOnce(t *testing.T) {
	t.Parallel()
	db := servertest.SharedDatabase(t)
	a := startServer(t, fastWebhooks, nil, servertest.DBPath(db))
	b := startServer(t, fastWebhooks, nil, servertest.DBPath(db))
	recv := startReceiver(t)
	hook := addWebhook(t, a.Node, fmt.Sprintf(`{"url":%q,"events":["*"]}`, recv.URL))
	const writes = 40
	for i := range writes {
		node := a.Node
		if i%2 == 1 {
			node = b.Node
		}
		mustDo(t, node, http.MethodPost, "/api/v1/rules", fmt.Sprintf(`{"kind":"flow","resource":"r%d","threshold":5}`, i), http.StatusCreated)
	}
	var list WebhookDeliveryList
	servertest.WaitUntil(t, "every delivery delivered", 20*time.Second, func() bool {
		data := mustDo(t, b.Node, http.MethodGet, fmt.Sprintf("/api/v1/webhooks/%d/deliveries?limit=100", hook.ID), "", http.StatusOK)
		list = WebhookDeliveryList{}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		return len(list.Items) == writes && !slices.ContainsFunc(list.Items, func(d WebhookDelivery) bool { return d.State != store.DeliveryDelivered })
	})
	got := recv.requests()
	delivered := recv.delivered()
	if len(got) != writes || len(delivered) != writes {
		t.Fatalf("the receiver got %d requests of %d events, want %d of %d", len(got), len(delivered), writes, writes)
	}
}

// TestWebhooksAStoppedServerReleasesItsClaims stops a server while its
// delivery waits on the receiver: the next server on the database
// delivers it at once, not when the stopped one's lease (50 s) ends.
func TestWebhooksAStoppedServerReleasesItsClaims(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	var held atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if held.Add(1) == 1 {
			<-hold
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(recv.Close)
	t.Cleanup(func() { close(hold) })
	dbPath := filepath.Join(t.TempDir(), "sluice.db")
	first := startServer(t, fastWebhooks, nil, servertest.DBPath(dbPath))
	addWebhook(t, first.Node, fmt.Sprintf(`{"url":%q,"events":["*"]}`, recv.URL))
	mustDo(t, first.Node, http.MethodPost, "/api/v1/rules", `{"kind":"flow","resource":"orders","threshold":5}`, http.StatusCreated)
	servertest.WaitUntil(t, "the delivery in flight", 10*time.Second, func() bool { return held.Load() == 1 })
	first.Stop(t)
	startServer(t, fastWebhooks, nil, servertest.DBPath(dbPath))
	servertest.WaitUntil(t, "the delivery made by the next server", 10*time.Second, func() bool { return held.Load() == 2 })
}

// TestWebhooksTellOfInstanceStates reports an instance, lets its reports
// stop (by the server's clock) until it is stale, then gone, and reports
// again: the receiver gets instance.stale, instance.gone and
// instance.back, in that order, and nothing for the instance's first
// report.
func TestWebhooksTellOfInstanceStates(t *testing.T) {
	t.Parallel()
	clock := &testClock{now: time.Now().UTC()}
	n := startServer(t, func(cfg *Config) {
		fastWebhooks(cfg)
		cfg.Now, cfg.InstanceWatchInterval = clock.Now, 10*time.Millisecond
	}, nil)
	recv := startReceiver(t)
	addWebhook(t, n.Node, fmt.Sprintf(`{"url":%q,"events":["instance.stale","instance.gone","instance.back"]}`, recv.URL))
	report := func() {
		mustDo(t, n.Node, http.MethodPost, "/api/v1/instances/report", `{"instance":{"id":"shop-1","app":"shop","hostname":"box"}}`, http.StatusNoContent)
	}
	report()
	servertest.WaitUntil(t, "the instance recorded", 10*time.Second, func() bool {
		states, err := n.Store.AnnouncedInstanceStates(t.Context())
		return err == nil && states["shop-1"] == "live"
	})
	steps := []struct {
		change func()
		want   string
	}{
		{func() { clock.Advance(11 * time.Second) }, eventInstanceStale},
		{func() { clock.Advance(5 * time.Minute) }, eventInstanceGone},
		{report, eventInstanceBack},
	}
	for i, step := range steps {
		step.change()
		servertest.WaitUntil(t, step.want+" delivered", 10*time.Second, func() bool { return len(recv.requests()) == i+1 })
		got := recv.requests()[i]
		var ev struct {
			Data InstanceEvent `json:"data"`
		}
		if err := json.Unmarshal(got.body, &ev); err != nil || got.eventType != step.want || ev.Data.ID != "shop-1" || ev.Data.App != "shop" {
			t.Fatalf("event %d: %s %s, want %s of shop-1", i, got.eventType, got.body, step.want)
		}
	}
	if got := recv.requests(); len(got) != len(steps) {
		t.Fatalf("%d events, want %d", len(got), len(steps))
	}
}

// BenchmarkWebhookDelivery is the outbox's throughput: b.N test events
// queued at once, delivered to a fast receiver on loopback by one server's
// worker (8 at a time).
func BenchmarkWebhookDelivery(b *testing.B) {
	n := startServer(b, func(cfg *Config) {
		cfg.WebhookAllowPrivate = true
		cfg.Webhook = webhook.Options{PollInterval: time.Hour}
	}, nil, servertest.DiscardLogs())
	var got atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
	b.Cleanup(recv.Close)
	hook := store.WebhookEndpoint{URL: recv.URL, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Events: []string{"*"}, Enabled: true}
	if err := n.Store.CreateWebhook(b.Context(), &hook); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if _, err := n.Store.Publish(b.Context(), store.Announcement{Type: eventTest, Data: []byte(`{}`), Endpoint: hook.ID}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	n.webhooks.Nudge()
	servertest.WaitUntil(b, "every event delivered", time.Minute, func() bool { return got.Load() >= int64(b.N) })
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// TestWebhooksAreBounded refuses a 101st endpoint (409): every rule write
// reads them all.
func TestWebhooksAreBounded(t *testing.T) {
	t.Parallel()
	n := startServer(t, nil, nil)
	for range maxWebhooks {
		e := store.WebhookEndpoint{URL: "https://203.0.113.10/", Secret: "whsec_x", Events: []string{"*"}}
		if err := n.Store.CreateWebhook(t.Context(), &e); err != nil {
			t.Fatal(err)
		}
	}
	resp, data := n.Do(t, http.MethodPost, "/api/v1/webhooks", strings.NewReader(`{"url":"https://203.0.113.10/","events":["*"]}`))
	if resp.StatusCode != http.StatusConflict || !strings.Contains(decodeEnvelope(t, resp, data).Message, "delete one first") {
		t.Fatalf("the 101st webhook: %d %s, want 409", resp.StatusCode, data)
	}
}

// TestWebhooksTellOfResourceOverflow fills an engine of two resources
// with calls on new names: a resource.overflow event comes with the
// server's warning, naming how many calls overflowed.
func TestWebhooksTellOfResourceOverflow(t *testing.T) {
	t.Parallel()
	n := startServer(t, func(cfg *Config) { fastWebhooks(cfg); cfg.UnguardedAPI = true }, nil,
		servertest.EngineOptions(engine.Options{MaxResources: 2}))
	recv := startReceiver(t)
	addWebhook(t, n.Node, fmt.Sprintf(`{"url":%q,"events":["resource.overflow"]}`, recv.URL))
	for i := range 5 {
		mustDo(t, n.Node, http.MethodPost, "/api/v1/check", fmt.Sprintf(`{"resource":"r%d"}`, i), http.StatusOK)
	}
	servertest.WaitUntil(t, "the overflow event", 10*time.Second, func() bool { return len(recv.requests()) > 0 })
	got := recv.requests()[0]
	var ev struct {
		Data OverflowEvent `json:"data"`
	}
	if err := json.Unmarshal(got.body, &ev); err != nil || got.eventType != eventResourceOverflow || ev.Data.Calls != 3 || ev.Data.MaxResources != 2 {
		t.Fatalf("event %s %s, want resource.overflow of 3 calls", got.eventType, got.body)
	}
}

// TestWebhooksTellOfASustainedBlockRate seeds the fleet's minutes of two
// resources: pay blocked at 80% in each of the last three minutes, orders
// at 80% in two of them. An endpoint whose condition is 50% for three
// minutes gets one resource.blockRate event, of pay, however often the
// condition is evaluated; another for four minutes gets none.
func TestWebhooksTellOfASustainedBlockRate(t *testing.T) {
	t.Parallel()
	clock := &testClock{now: time.Now().UTC().Truncate(time.Minute).Add(30 * time.Second)}
	n := startServer(t, func(cfg *Config) {
		fastWebhooks(cfg)
		cfg.Now, cfg.BlockRateInterval = clock.Now, 10*time.Millisecond
	}, nil)
	endMs := clock.Now().Truncate(time.Minute).UnixMilli()
	var deltas []store.MinuteDelta
	for i := int64(1); i <= 3; i++ {
		start := endMs - i*store.MinuteMs
		deltas = append(deltas, store.MinuteDelta{Resource: "pay", StartMs: start, Counts: engine.Counts{Calls: engine.Calls{Pass: 4, Block: 16}}})
		if i < 3 {
			deltas = append(deltas, store.MinuteDelta{Resource: "orders", StartMs: start, Counts: engine.Counts{Calls: engine.Calls{Pass: 4, Block: 16}}})
		}
	}
	if err := n.Store.AddMetrics(t.Context(), deltas); err != nil {
		t.Fatal(err)
	}
	recv := startReceiver(t)
	addWebhook(t, n.Node, fmt.Sprintf(`{"url":%q,"events":["resource.blockRate"],"blockRatePercent":50,"blockRateMinutes":3}`, recv.URL))
	longer := addWebhook(t, n.Node, fmt.Sprintf(`{"url":%q,"events":["resource.blockRate"],"blockRateMinutes":4}`, recv.URL))
	if longer.BlockRatePercent != 50 || longer.BlockRateMinutes != 4 {
		t.Fatalf("created %+v, want the default percent", longer.Webhook)
	}
	servertest.WaitUntil(t, "the block-rate event", 10*time.Second, func() bool { return len(recv.requests()) > 0 })
	// Evaluated again, as every tick and every replica does: still one.
	for range 2 {
		if err := announceBlockRates(t.Context(), n.Store, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int64{longer.ID - 1, longer.ID} {
		var list WebhookDeliveryList
		if err := json.Unmarshal(mustDo(t, n.Node, http.MethodGet, fmt.Sprintf("/api/v1/webhooks/%d/deliveries", id), "", http.StatusOK), &list); err != nil {
			t.Fatal(err)
		}
		if want := map[int64]int{longer.ID - 1: 1, longer.ID: 0}[id]; len(list.Items) != want {
			t.Fatalf("webhook %d has %d deliveries, want %d", id, len(list.Items), want)
		}
	}
	got := recv.requests()
	var ev struct {
		Data BlockRateEvent `json:"data"`
	}
	if len(got) != 1 || json.Unmarshal(got[0].body, &ev) != nil || got[0].eventType != eventResourceBlockRate ||
		ev.Data.Resource != "pay" || ev.Data.Minutes != 3 || ev.Data.Percent != 50 {
		t.Fatalf("events %+v, want one resource.blockRate of pay", got)
	}
	resp, data := n.Do(t, http.MethodPost, "/api/v1/webhooks", strings.NewReader(`{"url":"https://203.0.113.10/","events":["*"],"blockRateMinutes":61}`))
	if env := decodeEnvelope(t, resp, data); resp.StatusCode != http.StatusUnprocessableEntity || env.Details[0].Field != "blockRateMinutes" {
		t.Fatalf("blockRateMinutes 61: %d %s", resp.StatusCode, data)
	}
}

// TestWebhookSecretRotation rotates an endpoint's secret: the answer has
// the new one, and the next delivery verifies with it, not with the old.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	n := startServer(t, fastWebhooks, nil)
	recv := startReceiver(t)
	hook := addWebhook(t, n.Node, fmt.Sprintf(`{"url":%q,"events":["*"]}`, recv.URL))
	var rotated NewWebhook
	if err := json.Unmarshal(mustDo(t, n.Node, http.MethodPost, fmt.Sprintf("/api/v1/webhooks/%d/rotate-secret", hook.ID), "", http.StatusOK), &rotated); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == hook.Secret || rotated.ID != hook.ID {
		t.Fatalf("rotated %+v", rotated)
	}
	mustDo(t, n.Node, http.MethodPost, fmt.Sprintf("/api/v1/webhooks/%d/test", hook.ID), "", http.StatusAccepted)
	servertest.WaitUntil(t, "the test event", 10*time.Second, func() bool { return len(recv.requests()) == 1 })
	got := recv.requests()[0]
	for secret, want := range map[string]bool{rotated.Secret: true, hook.Secret: false} {
		verifier, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if ok := verifier.Verify(got.body, got.header) == nil; ok != want {
			t.Errorf("verified with the %s secret: %v, want %v", map[bool]string{true: "new", false: "old"}[want], ok, want)
		}
	}
	mustDo(t, n.Node, http.MethodPost, "/api/v1/webhooks/999/rotate-secret", "", http.StatusNotFound)
}
