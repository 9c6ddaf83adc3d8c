package sluice_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/sluicehq/sluice"

// allowedImports is docs/architecture.md's table: the module's packages each
// layer (a top-level directory, or the domains under server/) may import.
// The standard library is always allowed, and so is any other module,
// except in engine and, for Fiber, in the domains.
var allowedImports = map[string][]string{
	"engine":      {"engine"},
	"migrations":  {},
	"store":       {"engine", "migrations"},
	"web":         {},
	"docs":        {},
	"server":      {"engine", "store", "web", "docs", serverDomains},
	serverDomains: {"engine", "store", serverDomains},
	"cmd":         {"engine", "store", "server", serverDomains, "migrations", "web", "docs", "cmd"},
	"e2e":         {"engine", "store", "server", serverDomains, "web"},
	"internal":    {"engine"},
}

type goPackage struct {
	importPath string
	standard   bool
	imports    []string
}

// listPackages runs go list -deps over the module: its packages and every
// package they depend on, standard library included.
func listPackages(t *testing.T) map[string]goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps",
		"-f", `{{.ImportPath}} {{.Standard}}{{range .Imports}} {{.}}{{end}}`, "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]goPackage{}
	scanner := bufio.NewScanner(bytes.NewReader(out))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		pkgs[fields[0]] = goPackage{importPath: fields[0], standard: fields[1] == "true", imports: fields[2:]}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// relative returns the path of pkg inside the module and whether it is in
// the module at all.
func relative(pkg string) (string, bool) {
	if pkg == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(pkg, module+"/")
	return rel, ok
}

func topDir(rel string) string {
	top, _, _ := strings.Cut(rel, "/")
	return top
}

// serverDomains is the layer of the packages under server/: the domains
// behind the handlers, below the Fiber layer. They may use one another (the
// demo drives the rule domain); Go refuses an import of the Fiber layer
// above them as a cycle.
const serverDomains = "server/*"

// layer returns the row of allowedImports that rel belongs to.
func layer(rel string) string {
	if strings.HasPrefix(rel, "server/") {
		return serverDomains
	}
	return topDir(rel)
}

// frameworkMiddlewares are the engine packages that may import a module
// outside the standard library: Fiber, to guard Fiber routes, and gRPC, to
// guard gRPC calls. The net/http middleware and what the middlewares share
// are held to the engine's rule, so that a net/http service that guards
// its handlers links no Fiber and no gRPC.
var frameworkMiddlewares = []string{"engine/middleware/fibermw", "engine/middleware/grpcmw"}

// engineCore reports whether rel is the engine or one of its sub-packages
// other than the framework middlewares. (A nested module such as
// engine/benchmarks is not listed by ./... at all.)
func engineCore(rel string) bool {
	if topDir(rel) != "engine" {
		return false
	}
	for _, m := range frameworkMiddlewares {
		if rel == m || strings.HasPrefix(rel, m+"/") {
			return false
		}
	}
	return true
}

// violations lists every import in pkgs that breaks the layering.
func violations(pkgs map[string]goPackage) []string {
	var found []string
	for _, pkg := range pkgs {
		rel, inModule := relative(pkg.importPath)
		if !inModule || rel == "" {
			continue // the module root holds only this test
		}
		allowed, known := allowedImports[layer(rel)]
		if !known {
			found = append(found, fmt.Sprintf("%s: top-level directory %q is not in docs/architecture.md's layout", pkg.importPath, topDir(rel)))
			continue
		}
		for _, imp := range pkg.imports {
			if pkgs[imp].standard {
				continue
			}
			impRel, impInModule := relative(imp)
			switch {
			case engineCore(rel) && !(impInModule && engineCore(impRel)):
				found = append(found, fmt.Sprintf("%s imports %s: the engine imports the standard library and itself only", pkg.importPath, imp))
			case layer(rel) == serverDomains && strings.HasPrefix(imp, "github.com/gofiber/"):
				found = append(found, fmt.Sprintf("%s imports %s: the domains under server/ hold no Fiber types", pkg.importPath, imp))
			case !impInModule:
			case topDir(impRel) == "cmd" && topDir(rel) != "cmd":
				found = append(found, fmt.Sprintf("%s imports %s: nothing imports cmd", pkg.importPath, imp))
			case !slices.Contains(allowed, layer(impRel)):
				found = append(found, fmt.Sprintf("%s imports %s: %s may import only %v of this module", pkg.importPath, imp, layer(rel), allowed))
			}
		}
	}
	slices.Sort(found)
	return found
}

func TestImportBoundaries(t *testing.T) {
	pkgs := listPackages(t)
	if _, ok := pkgs[module+"/engine"]; !ok {
		t.Fatalf("go list did not list %s/engine", module)
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestImportBoundaryRules checks the checker on made-up packages, so that a
// rule that stopped firing would not pass unnoticed.
func TestImportBoundaryRules(t *testing.T) {
	std := func(path string) goPackage { return goPackage{importPath: path, standard: true} }
	pkg := func(path string, imports ...string) goPackage { return goPackage{importPath: path, imports: imports} }
	tests := []struct {
		name    string
		pkg     goPackage
		wantBad bool
	}{
		{name: "engine uses the standard library", pkg: pkg(module+"/engine", "sync", "time")},
		{name: "engine sub-package uses the engine", pkg: pkg(module+"/engine/flow", module+"/engine", module+"/engine/window")},
		{name: "engine uses a third-party module", pkg: pkg(module+"/engine", "github.com/gofiber/fiber/v2"), wantBad: true},
		{name: "engine sub-package uses a third-party module", pkg: pkg(module+"/engine/window", "golang.org/x/sync/errgroup"), wantBad: true},
		{name: "engine uses its Fiber middleware", pkg: pkg(module+"/engine", module+"/engine/middleware/fibermw"), wantBad: true},
		{name: "engine uses the store", pkg: pkg(module+"/engine", module+"/store"), wantBad: true},
		{name: "Fiber middleware uses Fiber, the engine and the shared middleware", pkg: pkg(module+"/engine/middleware/fibermw", "github.com/gofiber/fiber/v2", module+"/engine", module+"/engine/middleware/internal/guard")},
		{name: "net/http middleware uses the engine and the shared middleware", pkg: pkg(module+"/engine/middleware/nethttp", "net/http", module+"/engine", module+"/engine/middleware")},
		{name: "gRPC middleware uses gRPC, the engine and the shared middleware", pkg: pkg(module+"/engine/middleware/grpcmw", "google.golang.org/grpc", module+"/engine", module+"/engine/middleware/internal/guard")},
		{name: "net/http middleware uses gRPC", pkg: pkg(module+"/engine/middleware/nethttp", "google.golang.org/grpc"), wantBad: true},
		{name: "shared middleware uses gRPC", pkg: pkg(module+"/engine/middleware/internal/guard", "google.golang.org/grpc"), wantBad: true},
		{name: "net/http middleware uses Fiber", pkg: pkg(module+"/engine/middleware/nethttp", "github.com/gofiber/fiber/v2"), wantBad: true},
		{name: "net/http middleware uses the Fiber middleware", pkg: pkg(module+"/engine/middleware/nethttp", module+"/engine/middleware/fibermw"), wantBad: true},
		{name: "shared middleware uses Fiber", pkg: pkg(module+"/engine/middleware", "github.com/gofiber/fiber/v2"), wantBad: true},
		{name: "store uses the engine and migrations", pkg: pkg(module+"/store", module+"/engine", module+"/migrations", "gorm.io/gorm")},
		{name: "store uses the server", pkg: pkg(module+"/store", module+"/server"), wantBad: true},
		{name: "server uses cmd", pkg: pkg(module+"/server", module+"/cmd/sluice"), wantBad: true},
		{name: "server uses the store, web and docs", pkg: pkg(module+"/server", module+"/store", module+"/web", module+"/docs")},
		{name: "server uses a domain", pkg: pkg(module+"/server", module+"/server/metrics")},
		{name: "a domain uses the engine and the store", pkg: pkg(module+"/server/metrics", module+"/engine", module+"/store")},
		{name: "a domain uses the server", pkg: pkg(module+"/server/metrics", module+"/server"), wantBad: true},
		{name: "a domain uses Fiber", pkg: pkg(module+"/server/metrics", "github.com/gofiber/fiber/v2"), wantBad: true},
		{name: "unknown top-level directory", pkg: pkg(module + "/util"), wantBad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkgs := map[string]goPackage{tt.pkg.importPath: tt.pkg}
			for _, s := range []string{"sync", "time", "net/http"} {
				pkgs[s] = std(s)
			}
			got := violations(pkgs)
			if bad := len(got) > 0; bad != tt.wantBad {
				t.Errorf("violations = %q, want any: %v", got, tt.wantBad)
			}
		})
	}
}
