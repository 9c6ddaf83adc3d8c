package guardtest

import (
	"io"
	"net/http"
	"net/netip"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// Source is an extractor of a ParamCase, which each middleware's test
// turns into its own: Kind is "ip", "header", "query", "path", "cookie"
// or "func"; the func extractor is keyed "tenant" and reads the X-Tenant
// header in lower case.
type Source struct {
	Kind, Name string
}

// Request is a request of a ParamCase to /orders/<ID>?<Query>.
type Request struct {
	ID, Query  string
	Header     map[string]string
	WantStatus int
}

// ParamCase is a test of the origin and param extractors, the same for
// every middleware: its rules' resource is the route of /orders/<id>.
type ParamCase struct {
	Name      string
	Origin    *Source
	Params    []Source
	Proxies   []netip.Prefix
	Hotspot   []engine.HotspotRule
	Authority []engine.AuthorityRule
	Requests  []Request
	// WantMessage is the message of the requests answered 429, with the
	// block details on.
	WantMessage string
}

// Loopback are the networks of a test's own requests, as trusted proxies.
var Loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// perValue is a hotspot rule of one pass per value of key.
func perValue(key string) []engine.HotspotRule {
	return []engine.HotspotRule{{Name: "per-value", ParamKey: key, Threshold: 1}}
}

func header(kv ...string) map[string]string {
	h := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return h
}

// ParamCases are the extractor tests.
var ParamCases = []ParamCase{
	{
		Name:    "a header param is limited per value; a missing one not at all",
		Params:  []Source{{"header", "X-User"}},
		Hotspot: perValue("header:X-User"),
		Requests: []Request{
			{ID: "1", Header: header("X-User", "aaaa"), WantStatus: 200},
			{ID: "2", Header: header("X-User", "aaaa"), WantStatus: 429},
			{ID: "3", Header: header("X-User", "bbbb"), WantStatus: 200},
			{ID: "4", Header: header("X-User", "aaaa"), WantStatus: 429},
			{ID: "5", WantStatus: 200},
			{ID: "6", WantStatus: 200},
			{ID: "7", Header: header("X-User", ""), WantStatus: 200},
			{ID: "8", Header: header("X-User", ""), WantStatus: 200},
		},
		WantMessage: "too many requests: blocked by hotspot rule per-value",
	},
	{
		Name:      "an origin from a header is denied by an authority rule",
		Origin:    &Source{"header", "X-App"},
		Authority: []engine.AuthorityRule{{Name: "no-crawler", Strategy: engine.AuthorityDeny, Origins: []string{"crawler"}}},
		Requests: []Request{
			{ID: "1", Header: header("X-App", "crawler"), WantStatus: 429},
			{ID: "2", Header: header("X-App", "shop"), WantStatus: 200},
			{ID: "3", WantStatus: 200},
			{ID: "4", Header: header("X-App", "crawler"), WantStatus: 429},
		},
		WantMessage: "too many requests: blocked by authority rule no-crawler",
	},
	{
		Name:      "a missing origin is no origin: an allow rule blocks it",
		Origin:    &Source{"header", "X-App"},
		Authority: []engine.AuthorityRule{{Name: "shop-only", Strategy: engine.AuthorityAllow, Origins: []string{"shop"}}},
		Requests: []Request{
			{ID: "1", Header: header("X-App", "shop"), WantStatus: 200},
			{ID: "2", WantStatus: 429},
			{ID: "3", Header: header("X-App", ""), WantStatus: 429},
		},
		WantMessage: "too many requests: blocked by authority rule shop-only",
	},
	{
		Name:    "the client IP is the peer's, whatever X-Forwarded-For says",
		Params:  []Source{{"ip", ""}},
		Hotspot: perValue("ip"),
		Requests: []Request{
			{ID: "1", Header: header("X-Forwarded-For", "198.51.100.1"), WantStatus: 200},
			{ID: "2", Header: header("X-Forwarded-For", "198.51.100.2"), WantStatus: 429},
			{ID: "3", WantStatus: 429},
		},
		WantMessage: "too many requests: blocked by hotspot rule per-value",
	},
	{
		Name:    "X-Forwarded-For from a peer that is not a trusted proxy is ignored",
		Params:  []Source{{"ip", ""}},
		Proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Hotspot: perValue("ip"),
		Requests: []Request{
			{ID: "1", Header: header("X-Forwarded-For", "198.51.100.1"), WantStatus: 200},
			{ID: "2", Header: header("X-Forwarded-For", "198.51.100.2"), WantStatus: 429},
		},
		WantMessage: "too many requests: blocked by hotspot rule per-value",
	},
	{
		Name:    "behind a trusted proxy, the client IP is the rightmost untrusted of X-Forwarded-For",
		Params:  []Source{{"ip", ""}},
		Proxies: Loopback,
		Hotspot: perValue("ip"),
		Requests: []Request{
			{ID: "1", Header: header("X-Forwarded-For", "198.51.100.1"), WantStatus: 200},
			{ID: "2", Header: header("X-Forwarded-For", "198.51.100.1"), WantStatus: 429},
			{ID: "3", Header: header("X-Forwarded-For", "198.51.100.2"), WantStatus: 200},
			{ID: "4", Header: header("X-Forwarded-For", "203.0.113.7, 198.51.100.2"), WantStatus: 429},
			{ID: "5", Header: header("X-Forwarded-For", "198.51.100.3, 127.0.0.1"), WantStatus: 200},
			{ID: "6", WantStatus: 200}, // the proxy's own call: its address
			{ID: "7", WantStatus: 429},
		},
		WantMessage: "too many requests: blocked by hotspot rule per-value",
	},
	{
		Name:    "a query param is limited per value; a missing or empty one not at all",
		Params:  []Source{{"query", "key"}},
		Hotspot: perValue("query:key"),
		Requests: []Request{
			{ID: "1", Query: "key=k1", WantStatus: 200},
			{ID: "2", Query: "other=1&key=k1", WantStatus: 429},
			{ID: "3", Query: "key=k2", WantStatus: 200},
			{ID: "4", Query: "key=k%32", WantStatus: 429},
			{ID: "5", Query: "key=", WantStatus: 200},
			{ID: "6", Query: "key=", WantStatus: 200},
			{ID: "7", WantStatus: 200},
			{ID: "8", WantStatus: 200},
		},
		WantMessage: "too many requests: blocked by hotspot rule per-value",
	},
	{
		Name:    "a path param is limited per value",
		Params:  []Source{{"path", "id"}},
		Hotspot: perValue("path:id"),
		Requests: []Request{
			{ID: "1", WantStatus: 200},
			{ID: "1", WantStatus: 429},
			{ID: "2", WantStatus: 200},
		},
		WantMessage: "too many requests: blocked by hotspot rule per-value",
	},
	{
		Name:    "a cookie param is limited per value; a missing one not at all",
		Params:  []Source{{"cookie", "session"}},
		Hotspot: perValue("cookie:session"),
		Requests: []Request{
			{ID: "1", Header: header("Cookie", "theme=dark; session=s1"), WantStatus: 200},
			{ID: "2", Header: header("Cookie", "session=s1"), WantStatus: 429},
			{ID: "3", Header: header("Cookie", "session=s2"), WantStatus: 200},
			{ID: "4", Header: header("Cookie", "theme=dark"), WantStatus: 200},
			{ID: "5", WantStatus: 200},
			{ID: "6", WantStatus: 200},
		},
		WantMessage: "too many requests: blocked by hotspot rule per-value",
	},
	{
		Name:    "a func param is limited per value under its own key; \"\" is absent",
		Params:  []Source{{"func", ""}},
		Hotspot: perValue("tenant"),
		Requests: []Request{
			{ID: "1", Header: header("X-Tenant", "Acme"), WantStatus: 200},
			{ID: "2", Header: header("X-Tenant", "ACME"), WantStatus: 429},
			{ID: "3", Header: header("X-Tenant", "globex"), WantStatus: 200},
			{ID: "4", WantStatus: 200},
			{ID: "5", WantStatus: 200},
		},
		WantMessage: "too many requests: blocked by hotspot rule per-value",
	},
	{
		Name:   "params and origin together: each rule limits its own",
		Origin: &Source{"header", "X-App"},
		Params: []Source{{"header", "X-User"}, {"path", "id"}},
		Hotspot: []engine.HotspotRule{
			{Name: "per-user", ParamKey: "header:X-User", Threshold: 2},
			{Name: "per-order", ParamKey: "path:id", Threshold: 1},
		},
		Authority: []engine.AuthorityRule{{Name: "no-crawler", Strategy: engine.AuthorityDeny, Origins: []string{"crawler"}}},
		Requests: []Request{
			{ID: "1", Header: header("X-User", "aaaa", "X-App", "shop"), WantStatus: 200},
			{ID: "2", Header: header("X-User", "aaaa", "X-App", "shop"), WantStatus: 200},
			{ID: "3", Header: header("X-User", "bbbb", "X-App", "crawler"), WantStatus: 429},
			{ID: "3", Header: header("X-User", "bbbb", "X-App", "shop"), WantStatus: 200},
		},
		WantMessage: "too many requests: blocked by authority rule no-crawler",
	},
}

// Run sends the case's requests to base+"/orders/" and checks the
// answers; resource is the route's resource name, which the case's rules
// are loaded for on a new engine before newServer serves with it.
func (c ParamCase) Run(t *testing.T, resource string, newServer func(*engine.Engine) (base string)) {
	t.Helper()
	eng, _ := NewEngine(t)
	hotspot := make([]engine.HotspotRule, len(c.Hotspot))
	for i, r := range c.Hotspot {
		r.Resource = resource
		hotspot[i] = r
	}
	authority := make([]engine.AuthorityRule, len(c.Authority))
	for i, r := range c.Authority {
		r.Resource = resource
		authority[i] = r
	}
	if err := eng.LoadHotspotRules(hotspot); err != nil {
		t.Fatal(err)
	}
	if err := eng.LoadAuthorityRules(authority); err != nil {
		t.Fatal(err)
	}
	base := newServer(eng)
	for i, r := range c.Requests {
		url := base + "/orders/" + r.ID
		if r.Query != "" {
			url += "?" + r.Query
		}
		resp, body := Send(t, http.MethodGet, url, r.Header)
		if resp.StatusCode != r.WantStatus {
			t.Fatalf("request %d (%s %v): %d, want %d (%s)", i, url, r.Header, resp.StatusCode, r.WantStatus, body)
		}
		if r.WantStatus == http.StatusTooManyRequests {
			CheckBlocked(t, resp, body, c.WantMessage)
		}
	}
}

// Send sends a request with header to url and returns the answer with its
// body read.
func Send(t *testing.T, method, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}
