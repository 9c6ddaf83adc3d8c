package guardtest

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
)

// HeaderStep is a request of a HeaderCase to /orders/1?user=<User>, after
// the clock moved AdvanceMs. Want holds every header of HeaderNames that
// the answer must carry; the others it must not.
type HeaderStep struct {
	AdvanceMs  int64
	User       string
	WantStatus int
	Want       map[string]string
}

// HeaderNames are the headers a HeaderCase checks.
var HeaderNames = []string{
	"Retry-After", "RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
}

// HeaderCase is a test of the rate-limit headers and Retry-After, the same
// for every middleware: its guard has the style, the block details if
// Details, and the param "query:user"; its rules' resource is the route
// of /orders/<id>.
type HeaderCase struct {
	Name    string
	Style   middleware.RateLimitHeaders
	Details bool
	Flow    []engine.FlowRule
	Hotspot []engine.HotspotRule
	Steps   []HeaderStep
}

// ordersQps is a flow rule of 3 calls per 10 s, whose windows the header
// cases count in.
var ordersQps = engine.FlowRule{Name: "orders-qps", Threshold: 3, StatIntervalMs: 10_000}

// draft is the draft's fields of ordersQps's policy, named "default".
func draft(r, t string) map[string]string {
	return map[string]string{"RateLimit-Policy": `"default";q=3;w=10`, "RateLimit": `"default";r=` + r + ";t=" + t}
}

func with(h map[string]string, kv ...string) map[string]string {
	for i := 0; i < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return h
}

// HeaderCases are the header tests.
var HeaderCases = []HeaderCase{
	{
		Name:  "draft: what remains counts down, and the reset is the oldest pass's leaving",
		Style: middleware.HeadersDraft,
		Flow:  []engine.FlowRule{ordersQps},
		Steps: []HeaderStep{
			{WantStatus: 200, Want: draft("2", "10")},
			{AdvanceMs: 2000, WantStatus: 200, Want: draft("1", "8")},
			{AdvanceMs: 1000, WantStatus: 200, Want: draft("0", "7")},
			// 6.5 s until the pass of 0 s leaves: rounded up.
			{AdvanceMs: 500, WantStatus: 429, Want: with(draft("0", "7"), "Retry-After", "7")},
			{AdvanceMs: 6500, WantStatus: 200, Want: draft("0", "2")},
		},
	},
	{
		Name:  "x-ratelimit: Envoy's headers",
		Style: middleware.HeadersXRateLimit,
		Flow:  []engine.FlowRule{ordersQps},
		Steps: []HeaderStep{
			{WantStatus: 200, Want: map[string]string{"X-RateLimit-Limit": "3, 3;w=10", "X-RateLimit-Remaining": "2", "X-RateLimit-Reset": "10"}},
			{AdvanceMs: 1000, WantStatus: 200, Want: map[string]string{"X-RateLimit-Limit": "3, 3;w=10", "X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "9"}},
			{AdvanceMs: 1000, WantStatus: 200, Want: map[string]string{"X-RateLimit-Limit": "3, 3;w=10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "8"}},
			{AdvanceMs: 1000, WantStatus: 429, Want: map[string]string{
				"X-RateLimit-Limit": "3, 3;w=10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "7", "Retry-After": "7"}},
		},
	},
	{
		Name: "off: no rate-limit headers, and Retry-After from the rule all the same",
		Flow: []engine.FlowRule{ordersQps},
		Steps: []HeaderStep{
			{WantStatus: 200}, {WantStatus: 200}, {WantStatus: 200},
			{AdvanceMs: 4000, WantStatus: 429, Want: map[string]string{"Retry-After": "6"}},
		},
	},
	{
		Name:    "with the block details, the draft's policy is the rule",
		Style:   middleware.HeadersDraft,
		Details: true,
		Flow:    []engine.FlowRule{ordersQps},
		Steps: []HeaderStep{{WantStatus: 200, Want: map[string]string{
			"RateLimit-Policy": `"orders-qps";q=3;w=10`, "RateLimit": `"orders-qps";r=2;t=10`}}},
	},
	{
		Name:  "a per-value limit tells each value's numbers",
		Style: middleware.HeadersDraft,
		Flow:  []engine.FlowRule{{Name: "orders-qps", Threshold: 100, StatIntervalMs: 10_000}},
		Hotspot: []engine.HotspotRule{{Name: "per-user", ParamKey: "query:user", Threshold: 2, StatIntervalMs: 10_000,
			SpecificItems: map[string]float64{"vip": 5}}},
		Steps: []HeaderStep{
			{User: "a", WantStatus: 200, Want: map[string]string{"RateLimit-Policy": `"default";q=2;w=10`, "RateLimit": `"default";r=1;t=10`}},
			{User: "vip", WantStatus: 200, Want: map[string]string{"RateLimit-Policy": `"default";q=5;w=10`, "RateLimit": `"default";r=4;t=10`}},
			{AdvanceMs: 1000, User: "a", WantStatus: 200, Want: map[string]string{"RateLimit-Policy": `"default";q=2;w=10`, "RateLimit": `"default";r=0;t=9`}},
			{AdvanceMs: 1000, User: "a", WantStatus: 429, Want: map[string]string{
				"Retry-After": "8", "RateLimit-Policy": `"default";q=2;w=10`, "RateLimit": `"default";r=0;t=8`}},
			// Without a value, the hotspot rule does not apply: the flow rule does.
			{WantStatus: 200, Want: map[string]string{"RateLimit-Policy": `"default";q=100;w=10`, "RateLimit": `"default";r=96;t=8`}},
		},
	},
	{
		Name:  "no window rule, no rate-limit headers",
		Style: middleware.HeadersXRateLimit,
		Steps: []HeaderStep{{WantStatus: 200}},
	},
	{
		Name:  "a block that no window rule made waits the default second",
		Style: middleware.HeadersDraft,
		Flow: []engine.FlowRule{ordersQps,
			{Name: "no-slots", Metric: engine.MetricConcurrency, Threshold: 0}},
		Steps: []HeaderStep{{WantStatus: 429, Want: with(draft("3", "0"), "Retry-After", "1")}},
	},
}

// Run sends the case's requests to base+"/orders/1" and checks the
// answers' headers; resource is the route's resource name, which the
// case's rules are loaded for on a new engine on a manual clock before
// newServer serves with it.
func (c HeaderCase) Run(t *testing.T, resource string, newServer func(*engine.Engine) (base string)) {
	t.Helper()
	flow := make([]engine.FlowRule, len(c.Flow))
	for i, r := range c.Flow {
		r.Resource = resource
		flow[i] = r
	}
	eng, clock := NewEngine(t, flow...)
	hotspot := make([]engine.HotspotRule, len(c.Hotspot))
	for i, r := range c.Hotspot {
		r.Resource = resource
		hotspot[i] = r
	}
	if err := eng.LoadHotspotRules(hotspot); err != nil {
		t.Fatal(err)
	}
	base := newServer(eng)
	for i, s := range c.Steps {
		clock.Advance(s.AdvanceMs)
		url := base + "/orders/1"
		if s.User != "" {
			url += "?user=" + s.User
		}
		resp, body := Send(t, http.MethodGet, url, nil)
		if resp.StatusCode != s.WantStatus {
			t.Fatalf("request %d (%s): %d, want %d (%s)", i, url, resp.StatusCode, s.WantStatus, body)
		}
		for _, name := range HeaderNames {
			got, sent := resp.Header.Get(name), len(resp.Header.Values(name)) > 0
			if want, ok := s.Want[name]; got != want || sent != ok {
				t.Errorf("request %d (%s): %s = %q (sent %t), want %q", i, url, name, got, sent, want)
			}
		}
	}
}
