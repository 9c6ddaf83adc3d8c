package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
)

// TestSystemRules: a system rule is created without a resource, named
// after its metric, loaded into the server's engine with the other system
// rules, in the snapshot, and unloaded when deleted; its fields are
// checked as the engine checks them.
func TestSystemRules(t *testing.T) {
	t.Parallel()
	n := startServer(t, nil, nil)
	post := func(body string) (int, []byte) {
		resp, data := n.Do(t, http.MethodPost, "/api/v1/rules", strings.NewReader(body))
		return resp.StatusCode, data
	}

	for _, tc := range []struct {
		name, body, field string
	}{
		{"a resource", `{"kind":"system","resource":"orders","metricType":"load","triggerCount":2}`, "resource"},
		{"no metric", `{"kind":"system","triggerCount":2}`, "metricType"},
		{"an unknown metric", `{"kind":"system","metricType":"disk","triggerCount":2}`, "metricType"},
		{"a trigger of 0", `{"kind":"system","metricType":"avgRt","triggerCount":0}`, "triggerCount"},
		{"a CPU ratio over 1", `{"kind":"system","metricType":"cpuUsage","triggerCount":1.5}`, "triggerCount"},
		{"bbr on a response time", `{"kind":"system","metricType":"avgRt","triggerCount":50,"strategy":"bbr"}`, "strategy"},
		{"another kind's field", `{"kind":"system","metricType":"load","triggerCount":2,"threshold":5}`, "threshold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, data := post(tc.body)
			if status != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 422: %s", status, data)
			}
			var env struct {
				Error struct{ Details []FieldError }
			}
			if err := json.Unmarshal(data, &env); err != nil {
				t.Fatal(err)
			}
			named := false
			for _, d := range env.Error.Details {
				named = named || d.Field == tc.field
			}
			if !named {
				t.Errorf("details %+v do not name %s", env.Error.Details, tc.field)
			}
		})
	}
	if got := n.Engine.SystemRules(); len(got) != 0 {
		t.Fatalf("refused rules reached the engine: %+v", got)
	}

	ids := map[string]int64{}
	for _, body := range []string{
		`{"kind":"system","metricType":"cpuUsage","triggerCount":0.8}`,
		`{"kind":"system","metricType":"inboundQps","triggerCount":5000,"mode":"shadow"}`,
		`{"kind":"flow","resource":"orders","threshold":10}`,
	} {
		status, data := post(body)
		if status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", body, status, data)
		}
		var created struct {
			ID       int64
			Name     string
			Resource *string
			Strategy string
		}
		if err := json.Unmarshal(data, &created); err != nil {
			t.Fatal(err)
		}
		ids[created.Name] = created.ID
	}
	if _, ok := ids["system-cpuusage"]; !ok {
		t.Fatalf("names %v, want system-cpuusage among them", ids)
	}
	loaded := func() map[string]engine.SystemRule {
		out := map[string]engine.SystemRule{}
		for _, r := range n.Engine.SystemRules() {
			out[r.Name] = r
		}
		return out
	}
	got := loaded()
	if len(got) != 2 || got["system-cpuusage"].Strategy != engine.SystemBBR || got["system-inboundqps"].Mode != engine.ModeShadow {
		t.Fatalf("engine's system rules %+v, want both, cpuUsage with bbr, inboundQps in shadow", got)
	}

	resp, data := n.Do(t, http.MethodGet, "/api/v1/rules/snapshot", nil)
	if resp.StatusCode != http.StatusOK || strings.Count(string(data), `"kind":"system"`) != 2 {
		t.Fatalf("snapshot %d: %s, want both system rules", resp.StatusCode, data)
	}
	if _, err := wire.DecodeRules(snapshotRules(t, data)); err != nil {
		t.Fatalf("an instance cannot load the snapshot: %v", err)
	}

	resp, data = n.Do(t, http.MethodDelete, fmt.Sprintf("/api/v1/rules/%d", ids["system-cpuusage"]), nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, data)
	}
	if got := loaded(); len(got) != 1 || got["system-inboundqps"].Name == "" {
		t.Fatalf("after the delete the engine has %+v, want the inboundQps rule alone", got)
	}
	if len(n.Engine.FlowRules()) != 1 {
		t.Fatalf("the flow rule left the engine: %+v", n.Engine.FlowRules())
	}
}

// snapshotRules returns the rules of a snapshot's body.
func snapshotRules(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var snap struct{ Rules []json.RawMessage }
	if err := json.Unmarshal(body, &snap); err != nil {
		t.Fatal(err)
	}
	return snap.Rules
}

// TestImportSentinelSystemRules: sentinel-golang system rules import, named
// after their metric, twice a no-op; Load, whose trigger means another
// thing in Sentinel, is refused naming metricType.
func TestImportSentinelSystemRules(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	file := `[{"id": "s1", "metricType": 4, "triggerCount": 0.7},
		{"id": "s2", "metricType": 3, "triggerCount": 2000, "strategy": -1},
		{"metricType": 1, "triggerCount": 150}]`
	names := []string{"system-cpuusage", "system-inboundqps", "system-avgrt"}
	for _, want := range []planSummary{{created: names}, {unchanged: names}} {
		resp, body := ts.call(t, http.MethodPost, importPath+"?format=sentinel&kind=system", file, nil)
		mustStatus(t, resp, body, http.StatusOK)
		wantPlan(t, decodePlan(t, body), want)
	}
	got := map[string]engine.SystemRule{}
	for _, r := range ts.Server.engine.SystemRules() {
		got[r.Name] = r
	}
	if len(got) != 3 || got["system-cpuusage"].Strategy != engine.SystemBBR || got["system-cpuusage"].TriggerCount != 0.7 ||
		got["system-inboundqps"].Strategy != engine.SystemNoAdaptive || got["system-avgrt"].TriggerCount != 150 {
		t.Fatalf("the engine's system rules %+v", got)
	}

	resp, body := ts.call(t, http.MethodPost, importPath+"?format=sentinel&kind=system",
		`[{"metricType": 0, "triggerCount": 8}, {"metricType": 4, "triggerCount": 0.5, "strategy": 2}]`, nil)
	mustStatus(t, resp, body, http.StatusUnprocessableEntity)
	for _, field := range []string{"metricType", "strategy"} {
		if !strings.Contains(string(body), field) {
			t.Errorf("the refusal does not name %s: %s", field, body)
		}
	}
}
