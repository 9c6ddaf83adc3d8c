package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/sluicehq/sluice/server/servertest"
)

// The check API's routes are bound ahead of the middlewares (serveTraffic):
// these tests hold them to what the middlewares gave them.

// helmetHeaders are some of the browser security headers helmet sends.
var helmetHeaders = []string{"X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy", "Cross-Origin-Opener-Policy"}

// TestCheckRouteHeaders: the check's answers, decisions and errors alike,
// carry the JSON Content-Type and none of the browser security headers,
// which every other API route keeps.
func TestCheckRouteHeaders(t *testing.T) {
	t.Parallel()
	ts, _ := newCheckServer(t)
	for _, tt := range []struct {
		name, method, path, body string
		header                   reqHeader
		status                   int
		browser                  bool
	}{
		{"check", http.MethodPost, "/api/v1/check", `{"resource":"orders"}`, nil, http.StatusOK, false},
		{"batch", http.MethodPost, "/api/v1/check/batch", `{"checks":[{"resource":"orders"}]}`, nil, http.StatusOK, false},
		{"check refused", http.MethodPost, "/api/v1/check", `{"resource":"orders"}`, reqHeader{"Authorization": "Bearer nope"}, http.StatusUnauthorized, false},
		{"rules", http.MethodGet, rulesPath, "", nil, http.StatusOK, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.body != "" {
				body = tt.body
			}
			resp, got := ts.call(t, tt.method, tt.path, body, tt.header)
			mustStatus(t, resp, got, tt.status)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q", ct)
			}
			for _, h := range helmetHeaders {
				if has := resp.Header.Get(h) != ""; has != tt.browser {
					t.Errorf("%s present: %v, want %v", h, has, tt.browser)
				}
			}
		})
	}
}

// TestCheckBodyIsBounded: over a real connection, a check's body over
// 1 MiB is refused 413 in the error envelope, and one between the pooled
// buffer's size and the bound is read whole.
func TestCheckBodyIsBounded(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	editor, _ := n.newToken(t, "editor", roleEditor, "")
	asEditor := http.Header{"Authorization": {"Bearer " + editor}, "Content-Type": {"application/json"}}
	resp, body := n.DoWith(t, http.MethodPost, "/api/v1/check", strings.NewReader(strings.Repeat(" ", maxBodyBytes+1)), asEditor)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status = %d, want 413 (%s)", resp.StatusCode, body)
	}
	if e := decodeEnvelope(t, resp, body); e.Code != "payload_too_large" {
		t.Errorf("code = %q, want payload_too_large", e.Code)
	}
	for _, size := range []int{smallBodyBytes, smallBodyBytes + 1, 200 << 10} {
		check := `{"resource":"orders"}`
		resp, body = n.DoWith(t, http.MethodPost, "/api/v1/check", strings.NewReader(check+strings.Repeat(" ", size-len(check))), asEditor)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"allowed":true`)) {
			t.Errorf("a %d-byte check: %d %s", size, resp.StatusCode, body)
		}
	}
}

// TestCheckTokenRevokedOnNextRequest: the check route refuses a token on
// the request after its revocation.
func TestCheckTokenRevokedOnNextRequest(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	editor, id := n.newToken(t, "editor", roleEditor, "")
	check := func() int {
		status, _ := n.as(t, bearer(editor), http.MethodPost, "/api/v1/check", `{"resource":"orders"}`)
		return status
	}
	if status := check(); status != http.StatusOK {
		t.Fatalf("before the revocation: %d", status)
	}
	if status, body := n.as(t, bearer(servertest.AdminToken), http.MethodDelete, fmt.Sprintf("/api/v1/tokens/%d", id), ""); status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", status, body)
	}
	if status := check(); status != http.StatusUnauthorized {
		t.Errorf("after the revocation: %d, want 401", status)
	}
}

// TestCheckRouteGuard: a rule on the check route's resource blocks a
// non-admin's checks 429, as on every other API route.
func TestCheckRouteGuard(t *testing.T) {
	t.Parallel()
	ts, _ := newCheckServer(t, `{"name": "checks", "kind": "flow", "resource": "POST /api/v1/check", "threshold": 1}`)
	resp, body := ts.call(t, http.MethodPost, "/api/v1/tokens", `{"name": "svc", "role": "editor"}`, nil)
	mustStatus(t, resp, body, http.StatusCreated)
	svc := reqHeader{"Authorization": "Bearer " + decodeStrict[NewAPIToken](t, body).Token}
	resp, body = ts.call(t, http.MethodPost, "/api/v1/check", `{"resource":"orders"}`, svc)
	mustStatus(t, resp, body, http.StatusOK)
	resp, body = ts.call(t, http.MethodPost, "/api/v1/check", `{"resource":"orders"}`, svc)
	mustStatus(t, resp, body, http.StatusTooManyRequests)
	if e := decodeEnvelope(t, resp, body); !strings.Contains(e.Message, "checks") {
		t.Errorf("block answer = %+v, want the rule named", e)
	}
}

// TestCheckLogsErrorsAtInfo: a refused check is logged at info level,
// with its method, path and status; an answered one only at debug.
func TestCheckLogsErrorsAtInfo(t *testing.T) {
	t.Parallel()
	logs := &servertest.SyncBuffer{}
	ts := startServer(t, func(cfg *Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}, nil)
	resp, body := ts.call(t, http.MethodPost, "/api/v1/check", `{"resource":"answered"}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	resp, body = ts.call(t, http.MethodPost, "/api/v1/check", `{"resource":`, nil)
	mustStatus(t, resp, body, http.StatusBadRequest)
	got := logs.String()
	if !strings.Contains(got, "level=INFO msg=request method=POST path=/api/v1/check status=400") {
		t.Errorf("no info line for the refused check:\n%s", got)
	}
	if n := strings.Count(got, "msg=request"); n != 1 {
		t.Errorf("%d request lines at info, want 1 (the answered check is debug):\n%s", n, got)
	}
}

// TestCheckRouteAllocations holds a check's and a batch's way through the
// server, a streamed body as fasthttp gives it, to the allocations Fiber
// makes for any request under Immutable (the method and the three forms of
// the path): the body, the decoded checks, the answer and the decisions
// make none.
func TestCheckRouteAllocations(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's sync.Pool drops items at random")
	}
	srv := startServer(t, nil, nil, servertest.DiscardLogs())
	h := srv.app.Handler()
	auth := "Bearer " + servertest.AdminToken
	checks := make([]string, 100)
	for i := range checks {
		checks[i] = fmt.Sprintf(`{"resource":"bench-%d","count":1}`, i%10)
	}
	for _, tt := range []struct{ name, path, body string }{
		{"check", "/api/v1/check", `{"resource":"bench","count":1}`},
		{"batch of 100", "/api/v1/check/batch", `{"checks":[` + strings.Join(checks, ",") + `]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			check := []byte(tt.body)
			var ctx fasthttp.RequestCtx
			var body bytes.Reader
			allocs := testing.AllocsPerRun(200, func() {
				ctx.Request.Reset()
				ctx.Request.Header.SetMethod(http.MethodPost)
				ctx.Request.SetRequestURI(tt.path)
				ctx.Request.Header.SetContentType("application/json")
				ctx.Request.Header.Set("Authorization", auth)
				body.Reset(check)
				ctx.Request.SetBodyStream(&body, len(check))
				ctx.Response.Reset()
				h(&ctx)
			})
			if ctx.Response.StatusCode() != http.StatusOK {
				t.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
			if allocs > 4 {
				t.Errorf("%.1f allocations, want at most 4 (Fiber's copies of the method and path)", allocs)
			}
		})
	}
}

// TestCheckBatchAfterBatches: the decoded checks a batch leaves for the
// next (pooled) never show in another's answer: a small batch after a
// large one with params, and after one refused half-way, answers its own
// checks only.
func TestCheckBatchAfterBatches(t *testing.T) {
	t.Parallel()
	ts, _ := newCheckServer(t)
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprintf(`{"resource":"many-%d","params":{"user":"u%d"}}`, i, i)
	}
	resp, body := ts.call(t, http.MethodPost, "/api/v1/check/batch", `{"checks":[`+strings.Join(many, ",")+`]}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	resp, body = ts.call(t, http.MethodPost, "/api/v1/check/batch", `{"checks":[`+strings.Join(many[:50], ",")+`,{"resource":""}]}`, nil)
	mustStatus(t, resp, body, http.StatusUnprocessableEntity)
	resp, body = ts.call(t, http.MethodPost, "/api/v1/check/batch", `{"checks":[{"resource":"a"},{"resource":"b","count":2}]}`, nil)
	mustStatus(t, resp, body, http.StatusOK)
	if got := decodeStrict[CheckBatchResponse](t, body); len(got.Results) != 2 || !got.Results[0].Allowed || !got.Results[1].Allowed {
		t.Errorf("results = %+v, want two allowed", got.Results)
	}
}

// TestCheckRoutePanicIs500: a panic behind serveTraffic, which no
// recover middleware wraps, is answered 500 in the envelope and logged
// with its stack.
func TestCheckRoutePanicIs500(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	app := fiber.New()
	app.Post("/panics", ts.serveTraffic, func(*fiber.Ctx) error { panic("boom") })
	req := httptest.NewRequest(http.MethodPost, "/panics", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+servertest.AdminToken)
	resp, err := app.Test(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500 (%s)", resp.StatusCode, body)
	}
	if e := decodeEnvelope(t, resp, body); e.Code != "internal" {
		t.Errorf("code = %q, want internal", e.Code)
	}
	if logs := ts.Logs(); !strings.Contains(logs, "panic while handling a request") || !strings.Contains(logs, "panic=boom") {
		t.Errorf("the panic is not logged:\n%s", logs)
	}
}
