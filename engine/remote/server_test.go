package remote_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// testToken is the instance token the test server takes.
const testToken = "slc_instance_test"

// testServer is a test server, not Sluice: it stands in for a Sluice
// server's instance endpoints as docs/api.md's "Instances" section defines
// them, over a real HTTP listener. GET /api/v1/rules/snapshot answers the
// rule set with ETag "N", 304 to If-None-Match "N", and holds such a
// request up to wait (at most 60 s) until the revision moves; POST
// /api/v1/instances/report takes a report and counts each minute once per
// (instance, resource, time). Both want the bearer token testToken.
type testServer struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	revision int64
	rules    []json.RawMessage
	changed  chan struct{} // closed and replaced when the revision moves
	down     bool          // connections are dropped unanswered
	// closing answers 304 at once, without holding the request, as Sluice
	// does while it shuts down.
	closing bool
	// loseAnswers counts the next reports that are taken but whose
	// answer is lost, as if the connection broke after the server
	// counted them.
	loseAnswers int
	minutes     map[minuteID]minuteFigures
	duplicates  int
	mismatches  []string
	instances   map[string]instanceFigures
	lastLive    []json.RawMessage
	lastHot     []json.RawMessage
	reports     int
	notModified int
	etagsAsked  map[string]int
}

// minuteID is the key the server deduplicates a reported minute by.
type minuteID struct {
	instance, resource, time string
}

// minuteFigures are a reported minute's figures.
type minuteFigures struct {
	Pass           int64 `json:"pass"`
	Block          int64 `json:"block"`
	ShadowBlock    int64 `json:"shadowBlock"`
	Complete       int64 `json:"complete"`
	Error          int64 `json:"error"`
	RtSumMs        int64 `json:"rtSumMs"`
	MinRtMs        int64 `json:"minRtMs"`
	MaxRtMs        int64 `json:"maxRtMs"`
	MaxConcurrency int64 `json:"maxConcurrency"`
}

// instanceFigures is a report's instance.
type instanceFigures struct {
	ID            string `json:"id"`
	App           string `json:"app"`
	Hostname      string `json:"hostname"`
	PID           int    `json:"pid"`
	Version       string `json:"version"`
	RulesRevision int64  `json:"rulesRevision"`
}

func startTestServer(t *testing.T, rules ...string) *testServer {
	s := &testServer{
		t: t, changed: make(chan struct{}), minutes: map[minuteID]minuteFigures{},
		instances: map[string]instanceFigures{}, etagsAsked: map[string]int{},
	}
	s.setRules(rules...)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/rules/snapshot", s.snapshot)
	mux.HandleFunc("POST /api/v1/instances/report", s.report)
	s.srv = httptest.NewServer(s.guard(mux))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the server's base URL.
func (s *testServer) URL() string { return s.srv.URL }

// guard drops the connection while the server is down and wants the
// token.
func (s *testServer) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		down := s.down
		s.mu.Unlock()
		if down {
			dropConnection(w)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error": {"code": "unauthorized", "message": "a valid token is required", "details": []}}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// dropConnection closes the request's connection without an answer.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// setRules makes rules, JSON objects in the shape of GET /rules items,
// the next revision.
func (s *testServer) setRules(rules ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = make([]json.RawMessage, len(rules))
	for i, r := range rules {
		s.rules[i] = json.RawMessage(r)
	}
	s.revision++
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *testServer) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *testServer) setClosing(closing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = closing
}

func (s *testServer) loseNextAnswers(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseAnswers = n
}

func (s *testServer) snapshot(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("app") == "" {
		http.Error(w, `{"error": {"code": "validation_failed", "message": "app is required", "details": []}}`, http.StatusUnprocessableEntity)
		return
	}
	wait, err := time.ParseDuration(cmpOr(r.URL.Query().Get("wait"), "0s"))
	if err != nil || wait < 0 || wait > time.Minute {
		http.Error(w, `{"error": {"code": "validation_failed", "message": "wait must be 0s to 60s", "details": []}}`, http.StatusUnprocessableEntity)
		return
	}
	etag := r.Header.Get("If-None-Match")
	s.mu.Lock()
	if s.closing {
		wait = 0
	}
	s.mu.Unlock()
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		s.etagsAsked[etag]++
		current := `"` + strconv.FormatInt(s.revision, 10) + `"`
		changed := s.changed
		if etag != current {
			body, _ := json.Marshal(map[string]any{"revision": s.revision, "rules": s.rules})
			s.mu.Unlock()
			w.Header().Set("ETag", current)
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
			return
		}
		s.mu.Unlock()
		select {
		case <-changed:
			s.mu.Lock()
			s.etagsAsked[etag]--
			s.mu.Unlock()
			continue
		case <-timeout.C:
		case <-r.Context().Done():
		}
		s.mu.Lock()
		s.notModified++
		s.mu.Unlock()
		w.Header().Set("ETag", current)
		w.WriteHeader(http.StatusNotModified)
		return
	}
}

func (s *testServer) report(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Instance instanceFigures `json:"instance"`
		Minutes  []struct {
			Resource string `json:"resource"`
			Time     string `json:"time"`
			minuteFigures
		} `json:"minutes"`
		Live      []json.RawMessage `json:"live"`
		HotValues []json.RawMessage `json:"hotValues"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Instance.ID == "" || body.Minutes == nil || body.Live == nil {
		http.Error(w, `{"error": {"code": "validation_failed", "message": "bad report", "details": []}}`, http.StatusUnprocessableEntity)
		return
	}
	s.mu.Lock()
	s.reports++
	s.instances[body.Instance.ID] = body.Instance
	s.lastLive = body.Live
	s.lastHot = body.HotValues
	for _, m := range body.Minutes {
		at, err := time.Parse(time.RFC3339, m.Time)
		if err != nil || at.UnixMilli()%60_000 != 0 {
			s.mismatches = append(s.mismatches, "not a minute's start: "+m.Time)
		}
		id := minuteID{body.Instance.ID, m.Resource, m.Time}
		if seen, ok := s.minutes[id]; ok {
			s.duplicates++
			if seen != m.minuteFigures {
				s.mismatches = append(s.mismatches, fmt.Sprintf("%v sent as %+v, then as %+v", id, seen, m.minuteFigures))
			}
			continue
		}
		s.minutes[id] = m.minuteFigures
	}
	lose := s.loseAnswers > 0
	if lose {
		s.loseAnswers--
	}
	s.mu.Unlock()
	if lose {
		dropConnection(w)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// passes sums the pass counts of resource over every minute counted.
func (s *testServer) passes(resource string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for id, m := range s.minutes {
		if id.resource == resource {
			n += m.Pass
		}
	}
	return n
}

// minutePasses returns the pass count of each minute of resource counted,
// by time.
func (s *testServer) minutePasses(resource string) map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for id, m := range s.minutes {
		if id.resource == resource {
			out[id.time] = m.Pass
		}
	}
	return out
}

// checkNoMismatch fails the test if a minute was sent twice with other
// figures, or with a time that is not a minute's start.
func (s *testServer) checkNoMismatch() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mismatches) > 0 {
		s.t.Fatalf("the client split or changed minutes: %v", s.mismatches)
	}
}

// read calls fn with the server's state locked.
func (s *testServer) read(fn func(s *testServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// eventually polls cond every 2 ms until it holds, failing the test after a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		<-tick.C
	}
}
