package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/servertest"
)

// startServer runs a real server on a real SQLite file and returns its URL.
func startServer(t *testing.T) string {
	t.Helper()
	return servertest.Start(t, func(env servertest.Env) (servertest.Server, error) {
		return server.New(t.Context(), server.Config{
			Engine: env.Engine, Store: env.Store, Logger: env.Logger,
			BootstrapToken: cliToken, PasswordCost: bcrypt.MinCost,
		})
	}).URL
}

// cliToken is the admin token the test servers register and the CLI sends
// (as SLUICE_TOKEN).
const cliToken = servertest.AdminToken

// runCLI runs the program with args and returns its output and exit code.
func runCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), args, &stdout, &stderr)
	code := 0
	var exit *exitError
	switch {
	case errors.As(err, &exit):
		code = exit.code
	case err != nil:
		code = 1
		stderr.WriteString(err.Error())
	}
	return stdout.String() + stderr.String(), code
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRulesApplyForCI(t *testing.T) {
	url := startServer(t)
	t.Setenv("SLUICE_TOKEN", cliToken)
	v1 := writeFile(t, "rules.yaml", `
rules:
  - name: orders-qps
    kind: flow
    resource: GET:/api/orders
    threshold: 100
  - name: pay-conc
    kind: flow
    resource: POST:/api/pay
    metric: concurrency
    threshold: 8
`)
	steps := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"dry run finds drift", []string{"--dry-run"}, 2, []string{
			"+ create flow orders-qps (resource GET:/api/orders)", "+ create flow pay-conc", "Dry run: nothing was changed",
		}},
		{"apply", nil, 0, []string{"+ create flow orders-qps", "Applied: 2 create, 0 update, 0 delete, 0 unchanged."}},
		{"dry run finds nothing", []string{"--dry-run"}, 0, []string{"Nothing to do: 0 to create, 0 to update, 0 to delete, 2 unchanged."}},
		{"apply again", nil, 0, []string{"Nothing to do"}},
	}
	for _, step := range steps {
		out, code := runCLI(t, append([]string{"rules", "apply", "-f", v1, "--server", url, "--reason", "ci"}, step.args...)...)
		if code != step.wantCode {
			t.Fatalf("%s: exit %d, want %d\n%s", step.name, code, step.wantCode, out)
		}
		for _, want := range step.want {
			if !strings.Contains(out, want) {
				t.Fatalf("%s: output lacks %q:\n%s", step.name, want, out)
			}
		}
	}

	v2 := writeFile(t, "rules.yaml", `{"rules": [{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 150}]}`)
	out, code := runCLI(t, "rules", "apply", "-f", v2, "--server", url, "--prune", "--dry-run")
	if code != 2 || !strings.Contains(out, "threshold: 100 -> 150") || !strings.Contains(out, "- delete flow pay-conc") {
		t.Fatalf("dry run of a changed file: exit %d\n%s", code, out)
	}

	out, code = runCLI(t, "rules", "apply", "-f", v2, "--server", url, "--prune", "--dry-run", "--output", "json")
	var plan struct {
		DryRun  bool
		Updated []struct {
			Name    string
			Changes []struct {
				Field    string
				From, To any
			}
		}
		Deleted []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(out), &plan); code != 2 || err != nil || !plan.DryRun || len(plan.Updated) != 1 ||
		plan.Updated[0].Changes[0].Field != "threshold" || plan.Updated[0].Changes[0].To != 150.0 || len(plan.Deleted) != 1 {
		t.Fatalf("--output json: exit %d, %v, plan %+v\n%s", code, err, plan, out)
	}
	if out, code := runCLI(t, "rules", "apply", "-f", v2, "--server", url, "--output", "yaml"); code != 1 || !strings.Contains(out, "--output") {
		t.Fatalf("--output yaml: exit %d\n%s", code, out)
	}

	exported, code := runCLI(t, "rules", "export", "--server", url)
	if code != 0 || !strings.Contains(exported, "name: orders-qps") {
		t.Fatalf("export: exit %d\n%s", code, exported)
	}
	back := writeFile(t, "exported.yaml", exported)
	if out, code := runCLI(t, "rules", "apply", "-f", back, "--server", url, "--prune", "--dry-run"); code != 0 {
		t.Fatalf("applying the export back is not a no-op: exit %d\n%s", code, out)
	}
}

func TestRulesApplyErrors(t *testing.T) {
	url := startServer(t)
	t.Setenv("SLUICE_TOKEN", cliToken)
	bad := writeFile(t, "bad.yaml", "rules:\n  - name: x\n    kind: flow\n    resource: r\n    threshold: -1\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"invalid rule", []string{"rules", "apply", "-f", bad, "--server", url}, "rules[0].threshold: rule \"x\": must be >= 0"},
		{"no file flag", []string{"rules", "apply", "--server", url}, "-f is required"},
		{"missing file", []string{"rules", "apply", "-f", "/no/such/file", "--server", url}, "no such file"},
		{"server down", []string{"rules", "apply", "-f", bad, "--server", "http://127.0.0.1:1"}, "connect"},
		{"unknown rules command", []string{"rules", "delete"}, `unknown command "delete", want apply, import or export`},
		{"wrong token", []string{"rules", "export", "--server", url, "--token", "nope"}, "401 unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runCLI(t, tt.args...)
			if code != 1 || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, want 1 with %q in:\n%s", code, tt.want, out)
			}
		})
	}
}

// TestRulesApplyAHundredThousandRules: a file of 100,000 rules (a few MiB,
// over the 1 MiB of other bodies) applies through the CLI, and its export
// applies back as a no-op. It is a test of size: under the race detector it
// took three minutes, the longest of make test, so make test runs it in its
// pass without the detector; the smaller apply tests have it watch the
// same code for races.
func TestRulesApplyAHundredThousandRules(t *testing.T) {
	if raceDetector {
		t.Skip("a test of size, run by make test without the race detector")
	}
	const count = 100_000
	url := startServer(t)
	t.Setenv("SLUICE_TOKEN", cliToken)
	var b strings.Builder
	b.WriteString("rules:\n")
	for i := range count {
		fmt.Fprintf(&b, "  - {name: r%d, kind: flow, resource: res-%d, threshold: %d}\n", i, i%1000, i%500+1)
	}
	file := writeFile(t, "rules.yaml", b.String())

	out, code := runCLI(t, "rules", "apply", "-f", file, "--server", url)
	if code != 0 || !strings.HasSuffix(out, fmt.Sprintf("Applied: %d create, 0 update, 0 delete, 0 unchanged.\n", count)) {
		t.Fatalf("apply: exit %d, output ends %q", code, out[max(0, len(out)-200):])
	}
	exported := filepath.Join(t.TempDir(), "exported.json")
	if out, code := runCLI(t, "rules", "export", "--server", url, "--format", "json", "-o", exported); code != 0 {
		t.Fatalf("export: exit %d: %s", code, out)
	}
	out, code = runCLI(t, "rules", "apply", "-f", exported, "--server", url, "--prune", "--dry-run")
	if code != 0 || !strings.HasSuffix(out, fmt.Sprintf("Nothing to do: 0 to create, 0 to update, 0 to delete, %d unchanged.\n", count)) {
		t.Fatalf("the export applied back: exit %d, output ends %q", code, out[max(0, len(out)-200):])
	}
}

// TestRulesImport: rules import plans and applies an envoyproxy/ratelimit
// configuration and a sentinel-golang file, a dry run exiting 2 on drift,
// and prints each field the server refuses.
func TestRulesImport(t *testing.T) {
	url := startServer(t)
	t.Setenv("SLUICE_TOKEN", cliToken)
	envoyFile := filepath.Join("..", "..", "server", "testdata", "envoy", "examples-example-f28024e.yaml")
	steps := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"dry run finds drift", []string{"-f", envoyFile, "--format", "envoy", "--dry-run"}, 2, []string{
			"+ create hotspot rl-foo (resource rl:foo)", "+ create flow fake_name (resource rl:source_cluster=proxy/destination_cluster=fake)",
			"Plan: 15 to create, 0 to update, 0 to delete, 0 unchanged. Dry run: nothing was changed.",
		}},
		{"import", []string{"-f", envoyFile, "--format", "envoy", "--reason", "from envoy"}, 0, []string{"Applied: 15 create, 0 update, 0 delete, 0 unchanged."}},
		{"dry run finds nothing", []string{"-f", envoyFile, "--format", "envoy", "--dry-run"}, 0, []string{"Nothing to do: 0 to create, 0 to update, 0 to delete, 15 unchanged."}},
		{"an unsupported field", []string{"-f", filepath.Join("..", "..", "server", "testdata", "envoy", "examples-example.yaml"), "--format", "envoy"}, 1, []string{
			"the server answered 422 validation_failed", "descriptors[5].quota_mode: cannot be imported", "descriptors[6].metadata: cannot be imported",
		}},
		{"a kind beside envoy", []string{"-f", envoyFile, "--format", "envoy", "--kind", "hotspot"}, 1, []string{"kind: applies to format sentinel only"}},
		{"sentinel", []string{"-f", filepath.Join("..", "..", "server", "testdata", "sentinel", "flow_rules.json"), "--format", "sentinel", "--app", "checkout"}, 0, []string{
			"+ create flow flow-get-api-orders (resource GET:/api/orders)", "Applied: 3 create",
		}},
		{"no format", []string{"-f", envoyFile}, 1, []string{"-f and --format are required"}},
	}
	for _, step := range steps {
		out, code := runCLI(t, append([]string{"rules", "import", "--server", url}, step.args...)...)
		if code != step.wantCode {
			t.Fatalf("%s: exit %d, want %d\n%s", step.name, code, step.wantCode, out)
		}
		for _, want := range step.want {
			if !strings.Contains(out, want) {
				t.Fatalf("%s: output lacks %q:\n%s", step.name, want, out)
			}
		}
	}
	exported, code := runCLI(t, "rules", "export", "--server", url)
	for _, want := range []string{"name: rl-foo-baz-shady", "mode: shadow", "app: checkout"} {
		if code != 0 || !strings.Contains(exported, want) {
			t.Fatalf("export: exit %d, lacks %q\n%s", code, want, exported)
		}
	}
}
