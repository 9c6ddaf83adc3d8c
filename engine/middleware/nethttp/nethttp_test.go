package nethttp_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
	"github.com/sluicehq/sluice/engine/middleware/nethttp"
)

func TestGuard(t *testing.T) {
	type request struct {
		method, path string
		wantStatus   int
	}
	tests := []struct {
		name  string
		rules []engine.FlowRule
		// wrapHandlers guards the handlers on the mux instead of the mux.
		wrapHandlers bool
		opts         []nethttp.Option
		requests     []request
		// want is each resource's figures after the requests.
		want        map[string]guardtest.Stats
		wantMessage string // of the last request's block answer
		wantClockMs int64  // how far the clock moved
	}{
		{
			name: "the route pattern names the resource",
			requests: []request{
				{"GET", "/orders/1", 200}, {"GET", "/orders/2", 200}, {"HEAD", "/orders/3", 200},
			},
			want: map[string]guardtest.Stats{
				"GET /orders/{id}":  {Pass: 2, Complete: 2},
				"HEAD /orders/{id}": {Pass: 1, Complete: 1},
				"GET /orders/1":     {},
			},
		},
		{
			name:         "guarding the handlers names them alike",
			wrapHandlers: true,
			requests:     []request{{"GET", "/orders/1", 200}, {"GET", "/orders/2", 200}},
			want:         map[string]guardtest.Stats{"GET /orders/{id}": {Pass: 2, Complete: 2}},
		},
		{
			name:        "a blocked request is answered 429, naming no rule",
			rules:       []engine.FlowRule{{Name: "orders-qps", Resource: "GET /orders/{id}", Threshold: 1}},
			requests:    []request{{"GET", "/orders/1", 200}, {"GET", "/orders/2", 429}},
			want:        map[string]guardtest.Stats{"GET /orders/{id}": {Pass: 1, Block: 1, Complete: 1}},
			wantMessage: "too many requests",
		},
		{
			name:        "with details, the block answer names the rule",
			rules:       []engine.FlowRule{{Name: "orders-qps", Resource: "GET /orders/{id}", Threshold: 0}},
			opts:        []nethttp.Option{nethttp.WithBlockDetails()},
			requests:    []request{{"GET", "/orders/1", 429}},
			want:        map[string]guardtest.Stats{"GET /orders/{id}": {Block: 1}},
			wantMessage: "too many requests: blocked by flow rule orders-qps",
		},
		{
			name:         "a blocked guarded handler is answered 429",
			wrapHandlers: true,
			rules:        []engine.FlowRule{{Resource: "POST /orders", Threshold: 0}},
			opts:         []nethttp.Option{nethttp.WithBlockDetails()},
			requests:     []request{{"POST", "/orders", 429}},
			want:         map[string]guardtest.Stats{"POST /orders": {Block: 1}},
			wantMessage:  "too many requests: blocked by flow rule",
		},
		{
			name:     "5xx answers count as errors, 4xx do not",
			requests: []request{{"GET", "/fail/503", 503}, {"GET", "/fail/500", 500}, {"GET", "/fail/404", 404}},
			want:     map[string]guardtest.Stats{"GET /fail/{status}": {Pass: 3, Complete: 3, Errors: 2}},
		},
		{
			name:        "the response time is recorded",
			requests:    []request{{"GET", "/slow/40", 200}, {"GET", "/slow/20", 200}},
			want:        map[string]guardtest.Stats{"GET /slow/{ms}": {Pass: 2, Complete: 2, AvgRtMs: 30}},
			wantClockMs: 60,
		},
		{
			name: "a throttled request waits its turn",
			rules: []engine.FlowRule{{
				Resource: "GET /orders/{id}", Threshold: 10,
				ControlBehavior: engine.BehaviorThrottling, MaxQueueingTimeMs: 500,
			}},
			requests:    []request{{"GET", "/orders/1", 200}, {"GET", "/orders/2", 200}, {"GET", "/orders/3", 200}},
			want:        map[string]guardtest.Stats{"GET /orders/{id}": {Pass: 3, Complete: 3}},
			wantClockMs: 200,
		},
		{
			name:     "a path no pattern matches is not guarded",
			requests: []request{{"GET", "/nowhere", 404}, {"DELETE", "/orders/1", 405}},
			want:     map[string]guardtest.Stats{"GET /nowhere": {}, "GET ": {}, "DELETE /orders/{id}": {}},
		},
		{
			name: "a resource function names the resource",
			opts: []nethttp.Option{nethttp.WithResource(func(r *http.Request) string {
				if strings.HasPrefix(r.URL.Path, "/orders/") {
					return "orders"
				}
				return ""
			})},
			requests: []request{{"GET", "/orders/1", 200}, {"GET", "/slow/0", 200}},
			want:     map[string]guardtest.Stats{"orders": {Pass: 1, Complete: 1}, "GET /slow/{ms}": {}},
		},
		{
			name:  "a block answer of one's own",
			rules: []engine.FlowRule{{Resource: "GET /orders/{id}", Threshold: 0}},
			opts: []nethttp.Option{nethttp.WithBlocked(func(w http.ResponseWriter, _ *http.Request, blk *engine.BlockError) {
				http.Error(w, string(blk.Reason()), http.StatusServiceUnavailable)
			})},
			requests: []request{{"GET", "/orders/1", 503}},
			want:     map[string]guardtest.Stats{"GET /orders/{id}": {Block: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, clock := guardtest.NewEngine(t, tt.rules...)
			start := clock.NowMs()
			guard := nethttp.Guard(eng, tt.opts...)
			mux := http.NewServeMux()
			handle := func(pattern string, h http.HandlerFunc) {
				if tt.wrapHandlers {
					mux.Handle(pattern, guard(h))
				} else {
					mux.Handle(pattern, h)
				}
			}
			handle("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte("order " + r.PathValue("id")))
			})
			handle("POST /orders", func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusCreated)
			})
			handle("GET /fail/{status}", func(w http.ResponseWriter, r *http.Request) {
				switch r.PathValue("status") {
				case "503":
					w.WriteHeader(http.StatusServiceUnavailable)
				case "500":
					http.Error(w, "broken", http.StatusInternalServerError)
				default:
					http.NotFound(w, r)
				}
			})
			handle("GET /slow/{ms}", func(w http.ResponseWriter, r *http.Request) {
				switch r.PathValue("ms") {
				case "40":
					clock.Advance(40)
				case "20":
					clock.Advance(20)
				}
			})
			var h http.Handler = mux
			if !tt.wrapHandlers {
				h = guard(mux)
			}
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)

			var resp *http.Response
			var body string
			for _, r := range tt.requests {
				resp, body = guardtest.Get(t, r.method, srv.URL+r.path)
				if resp.StatusCode != r.wantStatus {
					t.Fatalf("%s %s: status = %d, want %d (%s)", r.method, r.path, resp.StatusCode, r.wantStatus, body)
				}
			}
			if tt.wantMessage != "" {
				guardtest.CheckBlocked(t, resp, body, tt.wantMessage)
			}
			for name, want := range tt.want {
				if got := guardtest.StatsOf(eng, name); got != want {
					t.Errorf("%q: %+v, want %+v", name, got, want)
				}
				if want == (guardtest.Stats{}) && guardtest.ResourceNames(eng)[name] {
					t.Errorf("the engine knows a resource %q", name)
				}
			}
			if moved := clock.NowMs() - start; moved != tt.wantClockMs {
				t.Errorf("the clock moved %d ms, want %d", moved, tt.wantClockMs)
			}
		})
	}
}

func TestGuardPanicIsRecordedAndRaisedAgain(t *testing.T) {
	eng, _ := guardtest.NewEngine(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	guarded := nethttp.Guard(eng)(mux)
	raised := make(chan any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			raised <- p
			if p != nil {
				http.Error(w, "recovered", http.StatusInternalServerError)
			}
		}()
		guarded.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	resp, body := guardtest.Get(t, "GET", srv.URL+"/boom")

	if p := <-raised; p != "boom" {
		t.Errorf("the panic seen outside is %v, want boom", p)
	}
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("status = %d, want 500 (%s)", resp.StatusCode, body)
	}
	if got, want := guardtest.StatsOf(eng, "GET /boom"), (guardtest.Stats{Pass: 1, Complete: 1, Errors: 1}); got != want {
		t.Errorf("GET /boom: %+v, want %+v", got, want)
	}
}

func TestGuardConcurrencyRule(t *testing.T) {
	eng, _ := guardtest.NewEngine(t, engine.FlowRule{
		Name: "report-slots", Resource: "GET /report", Metric: engine.MetricConcurrency, Threshold: 1,
	})
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /report", func(http.ResponseWriter, *http.Request) { <-release })
	srv := httptest.NewServer(nethttp.Guard(eng)(mux))
	t.Cleanup(srv.Close)

	first := make(chan int, 1)
	go func() {
		resp, err := guardtest.Client.Get(srv.URL + "/report")
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	report := eng.Resource("GET /report")
	guardtest.WaitFor(t, "the first request to be in flight", func() bool { return report.Concurrency() == 1 })

	resp, body := guardtest.Get(t, "GET", srv.URL+"/report")
	guardtest.CheckBlocked(t, resp, body, "too many requests")

	close(release)
	if status := <-first; status != http.StatusOK {
		t.Errorf("the first request: status %d, want 200", status)
	}
	if n := report.Concurrency(); n != 0 {
		t.Errorf("concurrency after both = %d, want 0", n)
	}
}

func TestGuardKeepsTheWriterReachable(t *testing.T) {
	eng, _ := guardtest.NewEngine(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, _ *http.Request) {
		if _, ok := w.(http.Flusher); !ok {
			http.Error(w, "not a flusher", http.StatusInternalServerError)
			return
		}
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("chunk"))
		w.(http.Flusher).Flush()
	})
	srv := httptest.NewServer(nethttp.Guard(eng)(mux))
	t.Cleanup(srv.Close)

	resp, body := guardtest.Get(t, "GET", srv.URL+"/stream")
	if resp.StatusCode != http.StatusOK || body != "chunk" {
		t.Errorf("status %d, body %q; want 200 and chunk", resp.StatusCode, body)
	}
}

// TestGuardedMuxMountedUnderAnother guards a mux that an outer mux mounts
// at "/": the request's Pattern is the outer mux's, and the resource must
// be named by the route of the mux the guard wraps.
func TestGuardedMuxMountedUnderAnother(t *testing.T) {
	eng := engine.New(engine.Options{})
	t.Cleanup(eng.Close)
	if err := eng.LoadFlowRules([]engine.FlowRule{{Resource: "POST /checkout", Threshold: 0}}); err != nil {
		t.Fatal(err)
	}
	inner := http.NewServeMux()
	inner.HandleFunc("POST /checkout", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
	inner.HandleFunc("GET /orders/{id}", func(http.ResponseWriter, *http.Request) {})
	outer := http.NewServeMux()
	outer.Handle("/", nethttp.Guard(eng)(inner))
	srv := httptest.NewServer(outer)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		method, path string
		want         int
	}{{"POST", "/checkout", http.StatusTooManyRequests}, {"GET", "/orders/7", http.StatusOK}} {
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
	if got := guardtest.StatsOf(eng, "GET /orders/{id}").Pass; got != 1 {
		t.Errorf("GET /orders/{id} passes = %d, want 1", got)
	}
}

// TestGuardedRequestsAreInbound: a system rule guards every request the
// middleware lets in, whatever its route.
func TestGuardedRequestsAreInbound(t *testing.T) {
	eng := engine.New(engine.Options{})
	t.Cleanup(eng.Close)
	if err := eng.LoadSystemRules([]engine.SystemRule{{Name: "inbound", MetricType: engine.SystemInboundQPS, TriggerCount: 1}}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /a", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /b", func(http.ResponseWriter, *http.Request) {})
	srv := httptest.NewServer(nethttp.Guard(eng)(mux))
	t.Cleanup(srv.Close)
	for i, tc := range []struct {
		path string
		want int
	}{{"/a", http.StatusOK}, {"/b", http.StatusTooManyRequests}} {
		resp, err := srv.Client().Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("request %d, GET %s = %d, want %d", i, tc.path, resp.StatusCode, tc.want)
		}
	}
}
