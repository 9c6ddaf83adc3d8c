package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSpecDocumentsInstanceRefusalsAndHeaders checks what the served spec
// says beyond the refusals TestSpecDocumentsEveryRefusal holds, as
// generated clients read it: every route that takes credentials lists the
// 403 an instance token earns there (it may call only its own routes), a
// 429 declares its Retry-After, a rule's answers their ETag, and the
// metric stream names each of its events' data, the opening backlog too.
func TestSpecDocumentsInstanceRefusalsAndHeaders(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Security  []map[string][]string `json:"security"`
			Responses map[string]struct {
				Headers map[string]any `json:"headers"`
				Schema  struct {
					Ref string `json:"$ref"`
				} `json:"schema"`
			} `json:"responses"`
		} `json:"paths"`
		Definitions map[string]struct {
			Properties map[string]struct {
				Ref string `json:"$ref"`
			} `json:"properties"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(servedSpec(t, startServer(t, nil, nil)), &doc); err != nil {
		t.Fatal(err)
	}
	instanceRoutes := map[string]bool{
		"GET /api/v1/rules/snapshot":    true,
		"POST /api/v1/instances/report": true,
		"POST /api/v1/cluster/exchange": true,
	}
	etagged := map[string]string{
		"GET /api/v1/rules/{id}":           "200",
		"POST /api/v1/rules":               "201",
		"PUT /api/v1/rules/{id}":           "200",
		"PATCH /api/v1/rules/{id}":         "200",
		"POST /api/v1/rules/{id}/rollback": "200",
		"GET /api/v1/rules/snapshot":       "200",
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			key := strings.ToUpper(method) + " " + path
			if len(op.Security) > 0 && !instanceRoutes[key] {
				if _, ok := op.Responses["403"]; !ok {
					t.Errorf("%s: takes credentials but lists no 403, which an instance token earns", key)
				}
			}
			if resp, ok := op.Responses["429"]; ok && resp.Headers["Retry-After"] == nil {
				t.Errorf("%s: its 429 declares no Retry-After", key)
			}
			if status, ok := etagged[key]; ok && op.Responses[status].Headers["ETag"] == nil {
				t.Errorf("%s: its %s declares no ETag", key, status)
			}
		}
	}

	stream := doc.Paths["/api/v1/metrics/stream"]["get"].Responses["200"].Schema.Ref
	events := doc.Definitions[strings.TrimPrefix(stream, "#/definitions/")].Properties
	for event, data := range map[string]string{"backlog": "server.StreamBacklog", "stats": "server.StreamStats", "breaker": "server.BreakerEvent"} {
		if got := events[event].Ref; got != "#/definitions/"+data {
			t.Errorf("the stream's schema (%s) gives the %s event's data as %q, want %s", stream, event, got, data)
		}
	}
}

// TestSpecDescribesTheImportOfEveryKind checks that the import's body
// schema has the fields of each kind of sentinel-golang rule it takes, not
// the flow rule's only.
func TestSpecDescribesTheImportOfEveryKind(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				In     string `json:"in"`
				Schema struct {
					Items struct {
						Ref string `json:"$ref"`
					} `json:"items"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
		Definitions map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(servedSpec(t, startServer(t, nil, nil)), &doc); err != nil {
		t.Fatal(err)
	}
	var ref string
	for _, p := range doc.Paths["/api/v1/rules/import"]["post"].Parameters {
		if p.In == "body" {
			ref = p.Schema.Items.Ref
		}
	}
	rule := doc.Definitions[strings.TrimPrefix(ref, "#/definitions/")].Properties
	for kind, fields := range map[string][]string{
		"flow":           {"tokenCalculateStrategy", "controlBehavior", "relationStrategy", "statIntervalInMs", "regex"},
		"circuitBreaker": {"strategy", "retryTimeoutMs", "minRequestAmount", "statIntervalMs", "maxAllowedRtMs", "probeNum"},
		"hotspot":        {"metricType", "paramKey", "paramIndex", "burstCount", "durationInSec", "specificItems"},
		"system":         {"metricType", "triggerCount", "strategy"},
	} {
		for _, f := range fields {
			if rule[f] == nil {
				t.Errorf("the import's body (%s) lacks %s, a field of sentinel-golang's %s rules", ref, f, kind)
			}
		}
	}
}
