package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/remote"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/cluster"
	"github.com/sluicehq/sluice/server/cluster/redistest"
	"github.com/sluicehq/sluice/server/servertest"
)

// testRedisTimeout bounds the tests' Redis calls: none of these tests is
// about a slow Redis, and a loaded machine's may miss the 50 ms default.
const testRedisTimeout = 2 * time.Second

// clusterNode starts a server whose engine shares the cluster count in
// the Redis at redisURL, as engine id.
func clusterNode(t *testing.T, redisURL, id string, opts ...servertest.Option) *authNode {
	t.Helper()
	counter, err := cluster.New(cluster.Options{URL: redisURL, Timeout: testRedisTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = counter.Close() })
	opts = append(opts, servertest.EngineOptions(engine.Options{Cluster: counter, ClusterEngine: id}))
	ts := startServer(t, func(cfg *Config) { cfg.Cluster = counter }, nil, opts...)
	return &authNode{testServer: ts}
}

// startInstance starts an instance of app shop on the server at url.
func startInstance(t *testing.T, url, token, id string) *remote.Client {
	t.Helper()
	c, err := remote.New(remote.Config{ServerURL: url, Token: token, App: "shop", InstanceID: id, PollWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clusterState is GET /cluster's state on n.
func clusterState(t *testing.T, n *authNode) ClusterStatus {
	t.Helper()
	status, data := n.as(t, bearer(servertest.AdminToken), http.MethodGet, "/api/v1/cluster", "")
	if status != http.StatusOK {
		t.Fatalf("GET /cluster: %d %s", status, data)
	}
	var st ClusterStatus
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestClusterRuleAcrossReplicasAndInstances runs one cluster rule on two
// replicas and an instance of each, sharing one Redis, driven at many
// times its threshold all along: Redis killed in the middle of it, every
// engine falls back and says so in GET /cluster and Prometheus; Redis
// restarted, every engine is on the shared count again; and no
// wall-clock second, through all of it, passes more than the threshold
// (and a little credit). Not parallel: it counts passes per wall-clock
// second, which other tests' load would skew.
func TestClusterRuleAcrossReplicasAndInstances(t *testing.T) {
	rds := redistest.Start(t)
	db := servertest.SharedDatabase(t)
	a := clusterNode(t, rds.URL(), "a", servertest.DBPath(db))
	b := clusterNode(t, rds.URL(), "b", servertest.DBPath(db))
	admin := bearer(servertest.AdminToken)
	const threshold = 200
	if status, data := a.as(t, admin, http.MethodPost, "/api/v1/rules",
		fmt.Sprintf(`{"name":"pay","kind":"flow","resource":"pay","threshold":%d,"scope":"cluster"}`, threshold)); status != http.StatusCreated {
		t.Fatalf("create the cluster rule: %d %s", status, data)
	}
	token, _ := a.newToken(t, "fleet", roleInstance, "")
	instances := []*remote.Client{startInstance(t, a.URL, token, "i1"), startInstance(t, b.URL, token, "i2")}
	engines := []*engine.Engine{a.Engine, b.Engine, instances[0].Engine(), instances[1].Engine()}
	pollUntil(t, "the cluster rule in every engine", 10*time.Second, func() bool {
		for _, e := range engines {
			if len(e.FlowRules()) != 1 {
				return false
			}
		}
		return true
	})

	var mu sync.Mutex
	var passes []time.Time
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, e := range engines {
		wg.Go(func() {
			r := e.Resource("pay")
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				before := time.Now()
				if entry, blk := r.Entry(); blk == nil {
					entry.Exit()
					// A pass is counted in a second only if it was surely
					// decided within it: a goroutine held up around the
					// call must not move passes into the next second.
					if after := time.Now(); after.Unix() == before.Unix() {
						mu.Lock()
						passes = append(passes, before)
						mu.Unlock()
					}
				}
			}
		})
	}
	waitFor := func(what string, state engine.ClusterState) {
		t.Helper()
		pollUntil(t, what, 5*time.Second, func() bool {
			for _, e := range engines {
				if e.ClusterStatus().State != state {
					return false
				}
			}
			return true
		})
	}
	time.Sleep(2500 * time.Millisecond) // traffic on the shared count
	for _, n := range []*authNode{a, b} {
		st := clusterState(t, n)
		if !st.Enabled || st.State != "cluster" || len(st.Rules) != 1 || st.Rules[0].Engines != 4 || st.Rules[0].FallbackThreshold != threshold/4 {
			t.Fatalf("GET /cluster with Redis up: %+v, want state cluster and the rule shared by 4 engines", st)
		}
	}

	rds.Kill()
	waitFor("every engine falling back with Redis killed", engine.ClusterFallingBack)
	st := clusterState(t, a)
	if st.State != "fallback" || !st.Rules[0].FallingBack || st.Rules[0].Fallback != "local" || st.LastError == "" {
		t.Fatalf("GET /cluster with Redis down: %+v", st)
	}
	if _, data := a.as(t, admin, http.MethodGet, "/metrics", ""); !strings.Contains(string(data), `sluice_cluster_state{state="fallback"} 1`) ||
		!strings.Contains(string(data), `sluice_cluster_rule_fallback{fallback="local",resource="pay",rule="pay"} 1`) {
		t.Fatalf("/metrics with Redis down lacks the fallback:\n%s", data)
	}
	time.Sleep(1500 * time.Millisecond) // traffic on the fallbacks

	rds.Restart()
	waitFor("every engine on the shared count once Redis is back", engine.ClusterShared)
	if st := clusterState(t, b); st.State != "cluster" || st.Rules[0].FallingBack {
		t.Fatalf("GET /cluster with Redis back: %+v", st)
	}
	time.Sleep(2 * time.Second) // traffic on the shared count again
	close(stop)
	wg.Wait()

	// Every wall-clock second, through the kill and the restart, holds the
	// threshold and two buckets' worth at most: a round's credit per engine
	// (threshold / 20 buckets / 4 engines), and what the others were
	// granted in the last round before the kill, which a fallback does not
	// know of. The fallbacks count what the window held when Redis last
	// answered, and their passes are charged to the count when it answers
	// again.
	perSecond := map[int64]int{}
	for _, at := range passes {
		perSecond[at.Unix()]++
	}
	first, last := passes[0].Unix(), passes[len(passes)-1].Unix()
	most := threshold + 2*threshold/engine.ClusterBuckets
	t.Logf("passes per wall-clock second over 4 engines: %v", perSecond)
	for s := first + 1; s < last; s++ {
		if n := perSecond[s]; n > most {
			t.Errorf("second %d: %d passes over 4 engines, more than %d (all: %v)", s-first, n, most, perSecond)
		}
	}
}

// TestClusterExchange checks the instances' route: each ask is judged by
// the stored rule, a key that is no cluster rule gets nothing, bad bodies
// are 422s naming the field, and a server without Redis answers 409.
func TestClusterExchange(t *testing.T) {
	t.Parallel()
	rds := redistest.Start(t)
	n := clusterNode(t, rds.URL(), "a")
	admin := bearer(servertest.AdminToken)
	if status, data := n.as(t, admin, http.MethodPost, "/api/v1/rules",
		`{"name":"pay","kind":"flow","resource":"pay","threshold":20,"scope":"cluster","app":"shop"}`); status != http.StatusCreated {
		t.Fatalf("create the cluster rule: %d %s", status, data)
	}
	token, _ := n.newToken(t, "fleet", roleInstance, "")
	instance := bearer(token)
	status, data := n.as(t, instance, http.MethodPost, "/api/v1/cluster/exchange",
		`{"engine":"i1","asks":[{"key":"pay","threshold":1000000,"intervalMs":1000,"want":500},{"key":"nope","threshold":5,"intervalMs":1000,"want":5}]}`)
	if status != http.StatusOK {
		t.Fatalf("exchange: %d %s", status, data)
	}
	var answer wire.ClusterAnswer
	if err := json.Unmarshal(data, &answer); err != nil {
		t.Fatal(err)
	}
	if len(answer.Leases) != 2 || answer.Leases[0].Granted != 20 || answer.Leases[1].Granted != 0 || answer.Leases[1].EndsInMs != 0 {
		t.Fatalf("leases %+v: want the stored threshold (20) granted for pay, nothing for an unknown key", answer.Leases)
	}

	for _, tc := range []struct{ body, field string }{
		{`{"asks":[]}`, "engine"},
		{`{"engine":"i1","asks":[{"threshold":5}]}`, "asks[0].key"},
		{`{"engine":"i1","asks":[{"key":"pay","want":-1}]}`, "asks[0].want"},
		{`{"engine":"i1","asks":[{"key":"pay","next":"yes"}]}`, "asks[0].next"},
		{`{"engine":"i1","returns":[{"key":"pay","unused":1.5}]}`, "returns[0].unused"},
		{`{"engine":"i1","asks":[{"key":"pay","extra":1}]}`, "asks[0].extra"},
		{`{"engine":"i1","asks":{}}`, "asks"},
	} {
		status, data := n.as(t, instance, http.MethodPost, "/api/v1/cluster/exchange", tc.body)
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(data), `"field":"`+tc.field+`"`) {
			t.Errorf("%s: %d %s, want 422 naming %s", tc.body, status, data, tc.field)
		}
	}
	many := `{"engine":"i1","asks":[` + strings.TrimSuffix(strings.Repeat(`{"key":"pay"},`, maxExchangeItems+1), ",") + `]}`
	if status, data := n.as(t, instance, http.MethodPost, "/api/v1/cluster/exchange", many); status != http.StatusUnprocessableEntity ||
		!strings.Contains(string(data), `"field":"asks"`) {
		t.Errorf("%d asks: %d %s, want 422 naming asks", maxExchangeItems+1, status, data)
	}

	plain := &authNode{testServer: startServer(t, nil, nil)}
	if status, data := plain.as(t, admin, http.MethodPost, "/api/v1/cluster/exchange",
		`{"engine":"i1","asks":[{"key":"pay","want":1}]}`); status != http.StatusConflict {
		t.Errorf("exchange without --redis: %d %s, want 409", status, data)
	}
	if st := clusterState(t, plain); st.Enabled || st.State != "" || len(st.Rules) != 0 {
		t.Errorf("GET /cluster without --redis: %+v", st)
	}
}

// TestClusterEnginesAreReportingInstances: an exchange counts among a
// rule's engines only while the instance it names reports: names that
// report nothing count as none, however many, and an instance that stops
// reporting stops counting. Not parallel: beside other tests, Redis
// answered past the exchange's deadline.
func TestClusterEnginesAreReportingInstances(t *testing.T) {
	rds := redistest.Start(t)
	counter, err := cluster.New(cluster.Options{URL: rds.URL(), Timeout: testRedisTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = counter.Close() })
	var nowMs atomic.Int64
	nowMs.Store(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixMilli())
	ts := startServer(t, func(cfg *Config) {
		cfg.Cluster = counter
		cfg.Now = func() time.Time { return time.UnixMilli(nowMs.Load()).UTC() }
	}, nil, servertest.EngineOptions(engine.Options{Cluster: counter, ClusterEngine: "server"}))
	n := &authNode{testServer: ts}
	if status, data := n.as(t, bearer(servertest.AdminToken), http.MethodPost, "/api/v1/rules",
		`{"name":"pay","kind":"flow","resource":"pay","threshold":20,"scope":"cluster","app":"shop"}`); status != http.StatusCreated {
		t.Fatalf("create the cluster rule: %d %s", status, data)
	}
	token, _ := n.newToken(t, "fleet", roleInstance, "")
	engines := func(id string) int {
		t.Helper()
		status, data := n.as(t, bearer(token), http.MethodPost, "/api/v1/cluster/exchange",
			`{"engine":"`+id+`","asks":[{"key":"pay","want":1}]}`)
		if status != http.StatusOK {
			t.Fatalf("exchange as %s: %d %s", id, status, data)
		}
		var answer wire.ClusterAnswer
		if err := json.Unmarshal(data, &answer); err != nil {
			t.Fatal(err)
		}
		return answer.Leases[0].Engines
	}
	report := func(id string) {
		t.Helper()
		if status, data := n.as(t, bearer(token), http.MethodPost, reportPath, `{"instance":{"id":"`+id+`","app":"shop"}}`); status != http.StatusNoContent {
			t.Fatalf("report of %s: %d %s", id, status, data)
		}
	}

	base := engines("x0")
	for i := 1; i <= 50; i++ {
		if got := engines(fmt.Sprintf("x%d", i)); got != base {
			t.Fatalf("after %d names that report nothing: %d engines, want %d", i+1, got, base)
		}
	}
	report("r1")
	report("r2")
	engines("r1")
	if got := engines("r2"); got != base+2 {
		t.Errorf("two reporting instances, and names that do not: %d engines, want %d", got, base+2)
	}

	nowMs.Add(20_000) // r1 stops reporting: stale
	report("r2")
	deadline := time.Now().Add(10 * time.Second)
	for got := engines("r1"); got != base+1; got = engines("r1") {
		if time.Now().After(deadline) {
			t.Fatalf("r1 stale: %d engines, want %d (r2 alone)", got, base+1)
		}
		engines("r2")
	}
}
