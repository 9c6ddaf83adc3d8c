package rules

import (
	"testing"
)

func TestExportFileWritesWhatDiffersInOrder(t *testing.T) {
	all, err := DecodeFile(rawItems(
		`{"name":"orders","kind":"flow","resource":"GET:/api/orders","threshold":100,"statIntervalMs":1000,"enabled":true,"mode":"enforce"}`,
		`{"resource":"1000","name":"per-user","kind":"hotspot","paramKey":"user","threshold":5,"specificItems":{"vip":50},"mode":"shadow","description":"yes"}`,
	))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ExportFile(all, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := `rules:
  - kind: flow
    name: orders
    resource: GET:/api/orders
    threshold: 100
  - kind: hotspot
    name: per-user
    resource: "1000"
    description: "yes"
    mode: shadow
    paramKey: user
    threshold: 5
    specificItems:
      vip: 50
`
	if string(got) != want {
		t.Errorf("YAML export:\n%s\nwant:\n%s", got, want)
	}
	got, err = ExportFile(all, "json")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"rules":[{"kind":"flow","name":"orders","resource":"GET:/api/orders","threshold":100},` +
		`{"kind":"hotspot","name":"per-user","resource":"1000","description":"yes","mode":"shadow","paramKey":"user","threshold":5,"specificItems":{"vip":50}}]}`; string(got) != want {
		t.Errorf("JSON export:\n%s\nwant:\n%s", got, want)
	}
}
