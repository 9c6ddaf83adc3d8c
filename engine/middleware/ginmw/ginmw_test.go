package ginmw_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/ginmw"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// newServer serves a gin engine, with the guard first after a recovery
// that counts the panics reaching it, on an httptest listener.
func newServer(t *testing.T, clock *engine.ManualClock, guard gin.HandlerFunc, panics *atomic.Int32) string {
	t.Helper()
	r := gin.New()
	r.Use(gin.CustomRecoveryWithWriter(nil, func(c *gin.Context, _ any) {
		panics.Add(1)
		c.AbortWithStatus(http.StatusInternalServerError)
	}), guard)
	r.GET("/orders/:id", func(c *gin.Context) {
		switch id := c.Param("id"); id {
		case "panic":
			panic("handler panicked")
		case "slow":
			clock.Advance(40)
			c.String(http.StatusOK, "slow")
		default:
			if status, err := strconv.Atoi(id); err == nil && status >= 400 {
				c.String(status, "failed")
				return
			}
			c.String(http.StatusOK, "order "+id)
		}
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestGuard(t *testing.T) {
	const resource = "GET /orders/:id"
	type request struct {
		path       string
		wantStatus int
	}
	tests := []struct {
		name        string
		rules       []engine.FlowRule
		opts        []ginmw.Option
		requests    []request
		want        map[string]guardtest.Stats
		wantMessage string
		wantClockMs int64
		wantPanics  int32
	}{
		{
			name:     "the route pattern names the resource",
			requests: []request{{"/orders/1", 200}, {"/orders/2", 200}},
			want:     map[string]guardtest.Stats{resource: {Pass: 2, Complete: 2}, "GET /orders/1": {}},
		},
		{
			name:        "a blocked request is answered 429, naming no rule",
			rules:       []engine.FlowRule{{Name: "orders-qps", Resource: resource, Threshold: 1}},
			requests:    []request{{"/orders/1", 200}, {"/orders/2", 429}},
			want:        map[string]guardtest.Stats{resource: {Pass: 1, Block: 1, Complete: 1}},
			wantMessage: "too many requests",
		},
		{
			name:        "with details, the block answer names the rule",
			rules:       []engine.FlowRule{{Name: "orders-qps", Resource: resource, Threshold: 0}},
			opts:        []ginmw.Option{ginmw.WithBlockDetails()},
			requests:    []request{{"/orders/1", 429}},
			want:        map[string]guardtest.Stats{resource: {Block: 1}},
			wantMessage: "too many requests: blocked by flow rule orders-qps",
		},
		{
			name:     "5xx answers count as errors, 4xx do not",
			requests: []request{{"/orders/503", 503}, {"/orders/500", 500}, {"/orders/404", 404}},
			want:     map[string]guardtest.Stats{resource: {Pass: 3, Complete: 3, Errors: 2}},
		},
		{
			name:        "the response time is recorded",
			requests:    []request{{"/orders/slow", 200}},
			want:        map[string]guardtest.Stats{resource: {Pass: 1, Complete: 1, AvgRtMs: 40}},
			wantClockMs: 40,
		},
		{
			name:       "a panic is counted as an error and goes on to the recovery",
			requests:   []request{{"/orders/panic", 500}},
			want:       map[string]guardtest.Stats{resource: {Pass: 1, Complete: 1, Errors: 1}},
			wantPanics: 1,
		},
		{
			name: "a throttled request waits its turn",
			rules: []engine.FlowRule{{
				Resource: resource, Threshold: 10,
				ControlBehavior: engine.BehaviorThrottling, MaxQueueingTimeMs: 500,
			}},
			requests:    []request{{"/orders/1", 200}, {"/orders/2", 200}, {"/orders/3", 200}},
			want:        map[string]guardtest.Stats{resource: {Pass: 3, Complete: 3}},
			wantClockMs: 200,
		},
		{
			name:     "a path no route matches is not guarded",
			requests: []request{{"/nowhere", 404}},
			want:     map[string]guardtest.Stats{"GET /nowhere": {}, "GET ": {}},
		},
		{
			name: "a resource function names the resource",
			opts: []ginmw.Option{ginmw.WithResource(func(c *gin.Context) string {
				if c.Param("id") == "1" {
					return "order one"
				}
				return ""
			})},
			requests: []request{{"/orders/1", 200}, {"/orders/2", 200}},
			want:     map[string]guardtest.Stats{"order one": {Pass: 1, Complete: 1}, resource: {}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, clock := guardtest.NewEngine(t, tt.rules...)
			start := clock.NowMs()
			var panics atomic.Int32
			base := newServer(t, clock, ginmw.Guard(eng, tt.opts...), &panics)
			var resp *http.Response
			var body string
			for _, r := range tt.requests {
				resp, body = guardtest.Get(t, http.MethodGet, base+r.path)
				if resp.StatusCode != r.wantStatus {
					t.Fatalf("GET %s: %d, want %d (%s)", r.path, resp.StatusCode, r.wantStatus, body)
				}
			}
			if tt.wantMessage != "" {
				guardtest.CheckBlocked(t, resp, body, tt.wantMessage)
			}
			for name, want := range tt.want {
				if got := guardtest.StatsOf(eng, name); got != want {
					t.Errorf("%s: %+v, want %+v", name, got, want)
				}
			}
			if got := clock.NowMs() - start; got != tt.wantClockMs {
				t.Errorf("clock moved %d ms, want %d", got, tt.wantClockMs)
			}
			if got := panics.Load(); got != tt.wantPanics {
				t.Errorf("%d panics reached the recovery, want %d", got, tt.wantPanics)
			}
		})
	}
}

func TestBreakerOpensOnServerErrors(t *testing.T) {
	eng, clock := guardtest.NewEngine(t)
	if err := eng.LoadCircuitBreakerRules([]engine.CircuitBreakerRule{{
		Name: "orders-errors", Resource: "GET /orders/:id", Strategy: engine.StrategyErrorCount,
		Threshold: 2, RetryTimeoutMs: 10_000, MinRequestAmount: 1, StatIntervalMs: 1000,
	}}); err != nil {
		t.Fatal(err)
	}
	var panics atomic.Int32
	base := newServer(t, clock, ginmw.Guard(eng, ginmw.WithBlockDetails()), &panics)
	for range 2 {
		if resp, body := guardtest.Get(t, http.MethodGet, base+"/orders/503"); resp.StatusCode != 503 {
			t.Fatalf("status %d, want the handler's 503 (%s)", resp.StatusCode, body)
		}
	}
	resp, body := guardtest.Get(t, http.MethodGet, base+"/orders/1")
	guardtest.CheckBlocked(t, resp, body, "too many requests: blocked by circuitBreaker rule orders-errors")
}

// kit is what the shared extractor cases build gin guards of.
var kit = guardtest.Kit[ginmw.Extractor, ginmw.Option]{
	ClientIP: ginmw.ClientIP,
	Header:   ginmw.Header,
	Query:    ginmw.Query,
	Path:     ginmw.Param,
	Cookie:   ginmw.Cookie,
	Tenant: ginmw.Func("tenant", func(c *gin.Context) string {
		return strings.ToLower(c.GetHeader("X-Tenant"))
	}),
	WithOrigin:         ginmw.WithOrigin,
	WithParam:          ginmw.WithParam,
	WithTrustedProxies: ginmw.WithTrustedProxies,
}

// TestParams runs the shared extractor cases (origin, every param source,
// trusted proxies) through a real listener.
func TestParams(t *testing.T) {
	for _, c := range guardtest.ParamCases {
		t.Run(c.Name, func(t *testing.T) {
			opts := append(kit.Options(t, c), ginmw.WithBlockDetails())
			c.Run(t, "GET /orders/:id", func(eng *engine.Engine) string {
				r := gin.New()
				r.Use(ginmw.Guard(eng, opts...))
				r.GET("/orders/:id", func(c *gin.Context) { c.String(http.StatusOK, "order "+c.Param("id")) })
				srv := httptest.NewServer(r)
				t.Cleanup(srv.Close)
				return srv.URL
			})
		})
	}
}

// TestExtractorKeys: the param keys follow the HTTP guards' naming.
func TestExtractorKeys(t *testing.T) { kit.CheckKeys(t) }
