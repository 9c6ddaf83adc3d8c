package server

import (
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"testing"
)

// servedSpec fetches /swagger/doc.json from ts.
func servedSpec(t *testing.T, ts *testServer) []byte {
	t.Helper()
	resp, body := ts.doWith(t, http.MethodGet, "/swagger/doc.json", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /swagger/doc.json: %d %s", resp.StatusCode, body)
	}
	return body
}

func TestServedSpecIsTheCommittedOne(t *testing.T) {
	committed, err := os.ReadFile("../docs/swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	served := servedSpec(t, newTestServer(t, nil))

	var want, got map[string]any
	if err := json.Unmarshal(committed, &want); err != nil {
		t.Fatalf("docs/swagger.json: %v", err)
	}
	if err := json.Unmarshal(served, &got); err != nil {
		t.Fatalf("/swagger/doc.json: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("/swagger/doc.json differs from docs/swagger.json:\n%s", served)
	}
	for _, key := range []string{"host", "schemes"} {
		if _, ok := got[key]; ok {
			t.Errorf("/swagger/doc.json has %q = %v; an empty one is invalid, and none is meant", key, got[key])
		}
	}
}
