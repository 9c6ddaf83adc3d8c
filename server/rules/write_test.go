package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// The write path's own behaviour, against a real store: the names a
// create makes up, and writes that race for one rule. The handlers' tests
// (server/rules_test.go) keep the statuses these errors map to.

func TestCreateNamesARuleWithoutOne(t *testing.T) {
	longSlugs := strings.Repeat("ab/", 85)
	longRun := strings.Repeat("a", 256)
	tests := []struct {
		name     string
		body     map[string]any
		wantName string // exact, or "" to check the pattern only
		prefix   string
	}{
		{name: "slug of the resource", body: map[string]any{"resource": "GET:/api/orders"}, wantName: "flow-get-api-orders"},
		{name: "second takes -2", body: map[string]any{"resource": "GET:/api/orders"}, wantName: "flow-get-api-orders-2"},
		{name: "third takes -3", body: map[string]any{"resource": "GET:/api/orders"}, wantName: "flow-get-api-orders-3"},
		{name: "runs of other characters are one dash, trimmed", body: map[string]any{"resource": "  --GET  /api//Orders--  "}, wantName: "flow-get-api-orders-4"},
		{name: "no a-z0-9 gives rule", body: map[string]any{"resource": "订单/服务"}, wantName: "flow-rule"},
		{name: "rule collides too", body: map[string]any{"resource": "***"}, wantName: "flow-rule-2"},
		{name: "an explicit name is taken into account", body: map[string]any{"resource": "y", "name": "flow-x"}, wantName: "flow-x"},
		{name: "after an explicit name", body: map[string]any{"resource": "x"}, wantName: "flow-x-2"},
		{name: "long resource is cut", body: map[string]any{"resource": longRun}, wantName: "flow-" + strings.Repeat("a", 123)},
		{name: "long resource is cut to leave room for -2", body: map[string]any{"resource": longRun}, wantName: "flow-" + strings.Repeat("a", 121) + "-2"},
		{name: "long slug never ends in a dash", body: map[string]any{"resource": longSlugs}, prefix: "flow-ab-ab-"},
		{name: "long slug with a suffix", body: map[string]any{"resource": longSlugs}, prefix: "flow-ab-ab-"},
	}
	// One store: each case names its rule among the rules of those before.
	s := openService(t)
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"kind": "flow", "threshold": 1}
			maps.Copy(body, tt.body)

			r, err := s.Create(t.Context(), decoded(t, jsonOf(t, body)), tester)

			if err != nil {
				t.Fatal(err)
			}
			if tt.wantName != "" && r.Name != tt.wantName {
				t.Errorf("name = %q, want %q", r.Name, tt.wantName)
			}
			if !strings.HasPrefix(r.Name, tt.prefix) {
				t.Errorf("name = %q, want the prefix %q", r.Name, tt.prefix)
			}
			if len(r.Name) > 128 || !ruleNameRE.MatchString(r.Name) {
				t.Errorf("name = %q (%d chars), want at most 128 chars matching %s", r.Name, len(r.Name), ruleNameRE)
			}
			if seen[r.Name] {
				t.Errorf("name %q was given twice", r.Name)
			}
			seen[r.Name] = true
		})
	}
}

// ruleNameRE is a valid rule name: up to 128 characters of a-z, 0-9, '.',
// '_' or '-', starting and ending with a letter or digit.
var ruleNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,126}[a-z0-9])?$`)

// jsonOf is v in JSON.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestConcurrentUpdates(t *testing.T) {
	const writers = 16
	// race runs the writers at once, writer i setting threshold 100+i
	// based on the versions match allows, and returns each one's error.
	race := func(t *testing.T, s *Service, id int64, match IfMatch) []error {
		t.Helper()
		edits := make([]Edit, writers)
		for i := range edits {
			edits[i] = patch(t, fmt.Sprintf(`{"threshold":%d}`, 100+i))
		}
		start := make(chan struct{})
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				<-start
				_, errs[i] = s.Update(t.Context(), id, match, edits[i], tester)
			})
		}
		close(start)
		wg.Wait()
		return errs
	}
	threshold := func(r Rule) float64 { return r.Spec.(engine.FlowRule).Threshold }
	wantLoaded := func(t *testing.T, s *Service, want float64) {
		t.Helper()
		if loaded := s.engine.FlowRules(); len(loaded) != 1 || loaded[0].Threshold != want {
			t.Errorf("the engine holds %+v, want orders at %v", loaded, want)
		}
	}

	t.Run("Success: of writers based on one version, one wins and the others are stale", func(t *testing.T) {
		s := openService(t)
		r, err := s.Create(t.Context(), decoded(t, `{"name":"orders","kind":"flow","resource":"r","threshold":1}`), tester)
		if err != nil {
			t.Fatal(err)
		}
		errs := race(t, s, r.ID, func(version int64) bool { return version == 1 })
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Errorf("writers %d and %d both won", won, i)
			case err == nil:
				won = i
			case !errors.Is(err, ErrStale):
				t.Errorf("writer %d: %v, want nil or ErrStale", i, err)
			}
		}
		if won < 0 {
			t.Fatalf("no writer won: %v", errs)
		}
		got, err := s.Get(t.Context(), r.ID)
		if err != nil || got.Version != 2 || threshold(got) != float64(100+won) {
			t.Errorf("Get = version %d, threshold %v, %v; want 2 and the winner's %d", got.Version, threshold(got), err, 100+won)
		}
		wantLoaded(t, s, float64(100+won))
	})
	t.Run("Success: writers without a version lose no update", func(t *testing.T) {
		s := openService(t)
		r, err := s.Create(t.Context(), decoded(t, `{"name":"orders","kind":"flow","resource":"r","threshold":1}`), tester)
		if err != nil {
			t.Fatal(err)
		}
		for i, err := range race(t, s, r.ID, nil) {
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
		got, err := s.Get(t.Context(), r.ID)
		if err != nil || got.Version != writers+1 {
			t.Errorf("version = %d, %v; want %d: one per write", got.Version, err, writers+1)
		}
		if _, total, err := s.Revisions(t.Context(), r.ID, store.Page{Number: 1, Size: 500}); err != nil || total != writers+1 {
			t.Errorf("revisions = %d, %v; want %d", total, err, writers+1)
		}
		wantLoaded(t, s, threshold(got))
	})
}
