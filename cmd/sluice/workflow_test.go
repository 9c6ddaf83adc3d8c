package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// docsWorkflow finds the GitHub Actions workflow in docs/ci.md.
var docsWorkflow = regexp.MustCompile("(?s)```yaml\n(# \\.github/workflows/sluice-rules\\.yml\n.*?)```\n")

// TestDocsWorkflow runs the steps of docs/ci.md's GitHub Actions workflow
// as a runner would, under bash -eo pipefail, with this test binary as the
// CLI and a stand-in for gh: the plan step, with a viewer token, passes on
// drift (exit code 2) and on no change and comments the plan, and fails on
// an error; the apply step applies with an editor token.
func TestDocsWorkflow(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("the workflow's steps run in bash: %v", err)
	}
	doc, err := os.ReadFile("../../docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	block := docsWorkflow.FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/ci.md has no .github/workflows/sluice-rules.yml")
	}
	var workflow struct {
		Defaults struct{ Run struct{ Shell string } }
		Jobs     map[string]struct{ Steps []struct{ Name, Run string } }
	}
	if err := yaml.Unmarshal(block[1], &workflow); err != nil {
		t.Fatal(err)
	}
	if workflow.Defaults.Run.Shell != "bash" {
		t.Fatalf("the workflow's shell is %q, want bash (-eo pipefail)", workflow.Defaults.Run.Shell)
	}
	script := func(job, step string) string {
		for _, s := range workflow.Jobs[job].Steps {
			if s.Name == step {
				return s.Run
			}
		}
		t.Fatalf("the workflow has no step %q in job %q", step, job)
		return ""
	}
	plan, apply := script("plan", "Plan"), script("apply", "Apply")

	url := startServer(t)
	viewerToken, editorToken := createToken(t, url, "viewer"), createToken(t, url, "editor")
	runner := t.TempDir()
	bin := filepath.Join(runner, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(runner, "sluice"), "exec env "+runMainEnv+"=1 '"+os.Args[0]+`' "$@"`)
	writeScript(t, filepath.Join(bin, "gh"), `[ "$*" = "pr comment 42 --body-file comment.md" ] && cp comment.md "$RUNNER_TEMP/comment.md"`)
	workspace := t.TempDir()
	runStep := func(script, token, rules string) (string, int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(workspace, "rules.yaml"), []byte(rules), 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(filepath.Join(runner, "comment.md"))
		file := filepath.Join(runner, "step.sh")
		if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), bash, "--noprofile", "--norc", "-eo", "pipefail", file)
		cmd.Dir = workspace
		cmd.Env = append(os.Environ(), "RUNNER_TEMP="+runner, "PATH="+bin+":"+os.Getenv("PATH"),
			"GITHUB_STEP_SUMMARY="+filepath.Join(runner, "summary.md"), "GITHUB_REPOSITORY=acme/rules", "GITHUB_SHA=abc123",
			"PR=42", "SLUICE_SERVER="+url, "SLUICE_TOKEN="+token)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	comment := func() string {
		data, err := os.ReadFile(filepath.Join(runner, "comment.md"))
		if err != nil {
			return "(none: " + err.Error() + ")"
		}
		return string(data)
	}
	const rules = "rules:\n  - {name: orders-qps, kind: flow, resource: GET:/api/orders, threshold: 100}\n"

	if out, code := runStep(plan, viewerToken, rules); code != 0 || !strings.Contains(comment(), "+ create flow orders-qps") {
		t.Fatalf("plan with drift: exit %d, want 0 and a comment with the plan\n%s\ncomment: %s", code, out, comment())
	}
	if out, code := runStep(apply, editorToken, rules); code != 0 || !strings.Contains(out, "Applied: 1 create") {
		t.Fatalf("apply: exit %d, want 0\n%s", code, out)
	}
	if out, code := runStep(plan, viewerToken, rules); code != 0 || !strings.Contains(comment(), "Nothing to do") {
		t.Fatalf("plan without drift: exit %d, want 0 and a comment saying nothing changes\n%s\ncomment: %s", code, out, comment())
	}
	invalid := strings.Replace(rules, "threshold: 100", "threshold: -1", 1)
	if out, code := runStep(plan, viewerToken, invalid); code != 1 || !strings.Contains(out, "must be >= 0") || !strings.HasPrefix(comment(), "(none") {
		t.Fatalf("plan of an invalid file: exit %d, want 1 and no comment\n%s\ncomment: %s", code, out, comment())
	}
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// createToken asks the server at url, as the admin, for an API token of
// role and returns its secret.
func createToken(t *testing.T, url, role string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/api/v1/tokens",
		bytes.NewReader([]byte(`{"name": "ci-`+role+`", "role": "`+role+`"}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+cliToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var created struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /tokens: %d, %v", resp.StatusCode, err)
	}
	return created.Token
}
