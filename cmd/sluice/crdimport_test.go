package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRulesImportKubernetesResource imports a sample of sentinel-golang's
// Kubernetes CRDs from its .yaml file, which the command sends as YAML.
func TestRulesImportKubernetesResource(t *testing.T) {
	url := startServer(t)
	t.Setenv("SLUICE_TOKEN", cliToken)
	sample := filepath.Join("..", "..", "server", "testdata", "sentinel", "k8s-crd", "datasource_v1_flowrules.yaml")
	out, code := runCLI(t, "rules", "import", "--server", url, "-f", sample, "--format", "sentinel", "--dry-run")
	for _, want := range []string{"+ create flow flow-abcd (resource abcd)", "Plan: 3 to create, 0 to update, 0 to delete, 0 unchanged."} {
		if code != 2 || !strings.Contains(out, want) {
			t.Fatalf("exit %d, want 2 and %q in:\n%s", code, want, out)
		}
	}
}
