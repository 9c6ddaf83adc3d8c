package ginmw_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoOtherFramework: a gin service that guards its routes links
// no other framework's adapter: not labstack/echo, Fiber or gRPC.
func TestLinksNoOtherFramework(t *testing.T) {
	const pkg = "github.com/sluicehq/sluice/engine/middleware/ginmw"
	cmd := exec.Command("go", "list", "-deps", pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	listed := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		path := strings.TrimSpace(line)
		listed[path] = true
		for _, other := range []string{"github.com/labstack/echo", "github.com/gofiber/", "github.com/valyala/fasthttp", "google.golang.org/grpc"} {
			if strings.HasPrefix(path, other) {
				t.Errorf("%s depends on %s", pkg, path)
			}
		}
	}
	// A listing without these is not the package's: the check above would
	// pass on nothing.
	for _, want := range []string{pkg, "github.com/gin-gonic/gin", "github.com/sluicehq/sluice/engine"} {
		if !listed[want] {
			t.Errorf("go list -deps %s does not list %s", pkg, want)
		}
	}
}
