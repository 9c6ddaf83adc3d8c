package nethttp_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoFramework: a net/http service that imports this package links
// the standard library and the engine, nothing else; above all not Fiber
// and fasthttp, which the Fiber middleware needs, nor gRPC (grpcmw), gin or
// echo (the nested modules ginmw and echomw). A shared package that
// started importing any of them would fail it.
func TestLinksNoFramework(t *testing.T) {
	const (
		module = "github.com/sluicehq/sluice"
		pkg    = module + "/engine/middleware/nethttp"
	)
	// go test puts its own Go's bin first in PATH, so this is the go
	// command that builds the package.
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	listed := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		path, standard, _ := strings.Cut(strings.TrimSpace(line), " ")
		listed[path] = true
		if standard == "true" || path == module+"/engine" || strings.HasPrefix(path, module+"/engine/") {
			continue
		}
		t.Errorf("%s depends on %s", pkg, path)
	}
	// A listing without these is not the package's: the check above would
	// pass on nothing.
	for _, want := range []string{pkg, module + "/engine", "net/http"} {
		if !listed[want] {
			t.Errorf("go list -deps %s does not list %s:\n%s", pkg, want, out)
		}
	}
}
