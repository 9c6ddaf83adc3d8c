package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const snapshotPath = "/api/v1/rules/snapshot"

// getSnapshot reads the snapshot with header, and decodes a 200's body.
func (ts *testServer) getSnapshot(t *testing.T, query string, header reqHeader) (*http.Response, RuleSnapshot) {
	t.Helper()
	path := snapshotPath
	if query != "" {
		path += "?" + query
	}
	resp, body := ts.call(t, http.MethodGet, path, nil, header)
	var snap RuleSnapshot
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &snap); err != nil {
			t.Fatalf("snapshot: %v\n%s", err, body)
		}
	}
	return resp, snap
}

// etagOf is the revision an ETag names.
func etagOf(t *testing.T, resp *http.Response) int64 {
	t.Helper()
	rev, err := strconv.ParseInt(trimQuotes(resp.Header.Get("ETag")), 10, 64)
	if err != nil {
		t.Fatalf("ETag %q is not a quoted revision", resp.Header.Get("ETag"))
	}
	return rev
}

func trimQuotes(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// TestSnapshotHoldsTheEnabledUnexpiredRules: the snapshot is the enabled
// rules that have not expired, as GET /rules shows them, with the
// revision as ETag; the revision grows with every write of any rule.
func TestSnapshotHoldsTheEnabledUnexpiredRules(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	resp, empty := ts.getSnapshot(t, "", nil)
	mustStatus(t, resp, nil, http.StatusOK)
	if empty.Rules == nil || len(empty.Rules) != 0 || etagOf(t, resp) != empty.Revision {
		t.Fatalf("before any rule: %+v, ETag %s; want no rules, the revision as ETag", empty, resp.Header.Get("ETag"))
	}
	on := ts.createRule(t, `{"name":"on","kind":"flow","resource":"orders","threshold":5,"expiresAt":"2100-01-01T00:00:00Z"}`)
	ts.createRule(t, `{"name":"off","kind":"flow","resource":"orders","threshold":5,"enabled":false}`)
	ts.createRule(t, `{"name":"over","kind":"flow","resource":"orders","threshold":5,"expiresAt":"2020-01-01T00:00:00Z"}`)
	breaker := ts.createRule(t, `{"name":"cb","kind":"circuitBreaker","resource":"pay","strategy":"errorRatio","threshold":0.5,"retryTimeoutMs":1000}`)

	resp, snap := ts.getSnapshot(t, "app=shop", nil)
	mustStatus(t, resp, nil, http.StatusOK)
	if snap.Revision <= empty.Revision || etagOf(t, resp) != snap.Revision {
		t.Errorf("revision %d (ETag %s) after four writes, want above %d and equal", snap.Revision, resp.Header.Get("ETag"), empty.Revision)
	}
	if len(snap.Rules) != 2 || snap.Rules[0].Name != "on" || snap.Rules[1].Name != "cb" {
		t.Fatalf("rules %+v, want on and cb, by id", snap.Rules)
	}
	listed, _ := ts.getRule(t, on.ID)
	got, _ := json.Marshal(snap.Rules[0])
	want, _ := json.Marshal(listed)
	if string(got) != string(want) {
		t.Errorf("snapshot rule %s, want it as GET /rules/{id} shows it: %s", got, want)
	}

	resp, body := ts.call(t, http.MethodDelete, ruleURL(breaker.ID), nil, nil)
	mustStatus(t, resp, body, http.StatusNoContent)
	resp, after := ts.getSnapshot(t, "", nil)
	mustStatus(t, resp, nil, http.StatusOK)
	if after.Revision <= snap.Revision || len(after.Rules) != 1 {
		t.Errorf("after a delete: revision %d, %d rules; want above %d, 1 rule", after.Revision, len(after.Rules), snap.Revision)
	}
}

// TestSnapshotIfNoneMatch: a caller that has the current revision gets
// 304, in every spelling of the ETag; one with an older revision gets the
// set.
func TestSnapshotIfNoneMatch(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	ts.createRule(t, `{"kind":"flow","resource":"orders","threshold":5}`)
	resp, snap := ts.getSnapshot(t, "", nil)
	mustStatus(t, resp, nil, http.StatusOK)
	rev := strconv.FormatInt(snap.Revision, 10)
	for _, tag := range []string{`"` + rev + `"`, rev, `W/"` + rev + `"`, `"0", "` + rev + `"`} {
		resp, _ := ts.getSnapshot(t, "", reqHeader{"If-None-Match": tag})
		if resp.StatusCode != http.StatusNotModified || etagOf(t, resp) != snap.Revision {
			t.Errorf("If-None-Match %s: %d, ETag %s; want 304 with the same ETag", tag, resp.StatusCode, resp.Header.Get("ETag"))
		}
	}
	resp, again := ts.getSnapshot(t, "", reqHeader{"If-None-Match": `"` + strconv.FormatInt(snap.Revision-1, 10) + `"`})
	if resp.StatusCode != http.StatusOK || again.Revision != snap.Revision {
		t.Errorf("an older revision: %d %+v, want 200 with revision %d", resp.StatusCode, again, snap.Revision)
	}
}

// TestSnapshotLongPoll: with wait, a caller that has the current revision
// is held until a rule changes, then answered the new set at once; or
// until wait ends, then 304.
func TestSnapshotLongPoll(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	resp, snap := ts.getSnapshot(t, "", nil)
	mustStatus(t, resp, nil, http.StatusOK)
	has := reqHeader{"If-None-Match": `"` + strconv.FormatInt(snap.Revision, 10) + `"`}

	start := time.Now()
	resp, _ = ts.getSnapshot(t, "wait=300ms", has)
	if resp.StatusCode != http.StatusNotModified || time.Since(start) < 300*time.Millisecond {
		t.Errorf("wait=300ms without a change: %d after %v, want 304 after 300ms", resp.StatusCode, time.Since(start))
	}

	type answer struct {
		status int
		snap   RuleSnapshot
		after  time.Duration
	}
	answered := make(chan answer, 1)
	start = time.Now()
	go func() {
		resp, body, err := ts.request(context.Background(), http.MethodGet, snapshotPath+"?wait=30", nil, has)
		a := answer{after: time.Since(start)}
		if err == nil {
			a.status = resp.StatusCode
			_ = json.Unmarshal(body, &a.snap)
		}
		answered <- a
	}()
	// The request is held: no answer before the write below.
	select {
	case a := <-answered:
		t.Fatalf("answered %d before any change", a.status)
	case <-time.After(200 * time.Millisecond):
	}
	written := time.Now()
	ts.createRule(t, `{"name":"new","kind":"flow","resource":"orders","threshold":5}`)
	select {
	case a := <-answered:
		if a.status != http.StatusOK || a.snap.Revision <= snap.Revision || len(a.snap.Rules) != 1 {
			t.Errorf("after the write: %d %+v, want 200 with the new rule", a.status, a.snap)
		}
		if late := time.Since(written); late > time.Second {
			t.Errorf("answered %v after the write, want within 1s", late)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held request was not answered within 5s of the write")
	}
}

// TestSnapshotShutdownReleasesWaiters: a held request is answered 304 as
// soon as the server shuts down, not when its wait ends.
func TestSnapshotShutdownReleasesWaiters(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	resp, snap := ts.getSnapshot(t, "", nil)
	mustStatus(t, resp, nil, http.StatusOK)
	answered := make(chan int, 1)
	go func() {
		resp, _, err := ts.request(context.Background(), http.MethodGet, snapshotPath+"?wait=60s", nil,
			reqHeader{"If-None-Match": strconv.FormatInt(snap.Revision, 10)})
		if err != nil {
			answered <- 0
			return
		}
		answered <- resp.StatusCode
	}()
	select {
	case status := <-answered:
		t.Fatalf("answered %d before the shutdown", status)
	case <-time.After(200 * time.Millisecond):
	}
	start := time.Now()
	ts.Stop(t)
	select {
	case status := <-answered:
		if status != http.StatusNotModified {
			t.Errorf("held request answered %d at shutdown, want 304", status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held request was not answered within 5s of the shutdown")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %v with a held request", took)
	}
}

// TestSnapshotParams: a bad wait or app is 400 naming it.
func TestSnapshotParams(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	for _, tt := range []struct{ query, field string }{
		{"wait=61s", "wait"},
		{"wait=61", "wait"},
		{"wait=2m", "wait"},
		{"wait=-1s", "wait"},
		{"wait=soon", "wait"},
		{"app=Shop", "app"},
		{"app=-shop", "app"},
	} {
		resp, body := ts.call(t, http.MethodGet, snapshotPath+"?"+tt.query, nil, nil)
		wantError(t, resp, body, http.StatusBadRequest, "bad_request", tt.field)
	}
	for _, query := range []string{"wait=60s", "wait=60", "wait=0", "wait=1m", "app=shop.eu-1"} {
		resp, body := ts.call(t, http.MethodGet, snapshotPath+"?"+query, nil, nil)
		mustStatus(t, resp, body, http.StatusOK)
	}
}

// TestSnapshotByApp: the snapshot of an app is the rules without an app
// and that app's own, by id; another app's rules are not in it, nor in the
// snapshot asked without an app.
func TestSnapshotByApp(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	for _, body := range []string{
		`{"name":"x-cap","kind":"flow","app":"x","resource":"orders","threshold":0}`,
		`{"name":"everywhere","kind":"flow","resource":"orders","threshold":100}`,
		`{"name":"y-cap","kind":"flow","app":"y","resource":"orders","threshold":1}`,
		`{"name":"x-off","kind":"flow","app":"x","resource":"orders","threshold":1,"enabled":false}`,
		`{"name":"x-deny","kind":"authority","app":"x","resource":"admin","strategy":"deny","origins":["scraper"]}`,
	} {
		ts.createRule(t, body)
	}
	tests := []struct {
		query string
		want  []string
	}{
		{query: "app=x", want: []string{"x-cap", "everywhere", "x-deny"}},
		{query: "app=y", want: []string{"everywhere", "y-cap"}},
		{query: "app=z", want: []string{"everywhere"}},
		{query: "", want: []string{"everywhere"}},
	}
	for _, tt := range tests {
		t.Run("?"+tt.query, func(t *testing.T) {
			resp, snap := ts.getSnapshot(t, tt.query, nil)

			mustStatus(t, resp, nil, http.StatusOK)
			if got := ruleNames(snap.Rules); !slices.Equal(got, tt.want) {
				t.Errorf("rules %v, want %v", got, tt.want)
			}
			for _, r := range snap.Rules {
				if r.Name == "x-cap" && r.App != "x" {
					t.Errorf("x-cap is listed with app %q, want x", r.App)
				}
			}
		})
	}
	// Allowed, and the limit told is everywhere's: x-cap and y-cap are
	// their apps' alone. The real clock's slack moves resetMs.
	want := `{"allowed":true,"waitMs":0,"limit":100,"intervalMs":1000,"remaining":99,`
	if answer := ts.checkAnswer(t, "orders"); !strings.HasPrefix(answer, want) {
		t.Errorf("the server's POST /check on orders = %s, want %s…: x-cap is x's alone", answer, want)
	}
}
