package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestImportSentinelKubernetesSamples imports the samples of
// sentinel-golang's Kubernetes CRDs (testdata/sentinel/k8s-crd, source in
// its README) as they are, YAML custom resources whose enums are names:
// the resource's kind says the rules' kind, and each name means its number.
func TestImportSentinelKubernetesSamples(t *testing.T) {
	yamlBody := reqHeader{"Content-Type": "application/yaml"}
	sample := func(t *testing.T, name string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("testdata", "sentinel", "k8s-crd", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}

	t.Run("FlowRules", func(t *testing.T) {
		ts := startServer(t, nil, nil)
		resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel", sample(t, "datasource_v1_flowrules.yaml"), yamlBody)
		mustStatus(t, resp, got, http.StatusOK)
		if plan := decodePlan(t, got); len(plan.Created) != 3 || len(plan.Notes) != 0 {
			t.Fatalf("plan %s, want the 3 rules created and nothing dropped", got)
		}
		resp, got = ts.call(t, http.MethodGet, rulesPath+"?resource=abcd", nil, nil)
		mustStatus(t, resp, got, http.StatusOK)
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal(got, &list); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"kind": "flow", "threshold": 200.0, "relationStrategy": "current", "tokenCalculateStrategy": "warmUp",
			"controlBehavior": "reject", "warmUpPeriodSec": 20.0, "warmUpColdFactor": 3.0}
		if len(list.Items) != 1 {
			t.Fatalf("rules of abcd: %s, want one", got)
		}
		for field, value := range want {
			if list.Items[0][field] != value {
				t.Errorf("abcd's %s = %v, want %v (WarmUp, Reject, CurrentResource by name)", field, list.Items[0][field], value)
			}
		}
	})

	t.Run("CircuitBreakerRules", func(t *testing.T) {
		// The sample's first two rules have ratios over 1, which
		// sentinel-golang refuses too; their strategies, names all, are read.
		ts := startServer(t, nil, nil)
		resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel&dryRun=true", sample(t, "datasource_v1_circuitbreakerrules.yaml"), yamlBody)
		e := wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", "rules[0].threshold", "rules[1].threshold")
		if len(e.Details) != 2 {
			t.Errorf("details = %+v, want the two ratios only", e.Details)
		}
	})

	t.Run("a kind that is not the resource's", func(t *testing.T) {
		ts := startServer(t, nil, nil)
		resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel&kind=hotspot&dryRun=true", sample(t, "datasource_v1_flowrules.yaml"), yamlBody)
		wantError(t, resp, got, http.StatusBadRequest, "bad_request", "kind")
	})

	t.Run("a name sentinel-golang has not", func(t *testing.T) {
		ts := startServer(t, nil, nil)
		resp, got := ts.call(t, http.MethodPost, importPath+"?format=sentinel&dryRun=true",
			`[{"resource":"GET:/api/orders","threshold":10,"controlBehavior":"Queue"}]`, nil)
		wantError(t, resp, got, http.StatusUnprocessableEntity, "validation_failed", "rules[0].controlBehavior")
	})
}
