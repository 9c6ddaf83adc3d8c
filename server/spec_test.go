package server

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// specDoc is the part of the OpenAPI document the tests read.
type specDoc struct {
	Paths map[string]map[string]specOperation `json:"paths"`
}

type specOperation struct {
	ID        string                 `json:"operationId"`
	Security  *[]map[string][]string `json:"security"`
	Responses map[string]struct {
		Schema struct {
			Ref string `json:"$ref"`
		} `json:"schema"`
	} `json:"responses"`
}

// servedSpec fetches /swagger/doc.json from ts.
func servedSpec(t *testing.T, ts *testServer) []byte {
	t.Helper()
	resp, body := ts.DoWith(t, http.MethodGet, "/swagger/doc.json", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /swagger/doc.json: %d %s", resp.StatusCode, body)
	}
	return body
}

func TestServedSpecIsTheCommittedOne(t *testing.T) {
	t.Parallel()
	committed, err := os.ReadFile("../docs/swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	served := servedSpec(t, startServer(t, nil, nil))

	var want, got map[string]any
	if err := json.Unmarshal(committed, &want); err != nil {
		t.Fatalf("docs/swagger.json: %v", err)
	}
	if err := json.Unmarshal(served, &got); err != nil {
		t.Fatalf("/swagger/doc.json: %v", err)
	}
	// The served info.version is the server's (the harness names it 1.2.3-test).
	if v := got["info"].(map[string]any)["version"]; v != "1.2.3-test" {
		t.Errorf("info.version = %v, want the server's version, 1.2.3-test", v)
	}
	want["info"].(map[string]any)["version"] = "1.2.3-test"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("/swagger/doc.json differs from docs/swagger.json:\n%s", served)
	}
	for _, key := range []string{"host", "schemes"} {
		if _, ok := got[key]; ok {
			t.Errorf("/swagger/doc.json has %q = %v; an empty one is invalid, and none is meant", key, got[key])
		}
	}
}

// fiberParam is a Fiber route parameter, written {name} in the spec.
var fiberParam = regexp.MustCompile(`:(\w+)`)

// TestSpecDocumentsEveryRefusal checks the served spec against the routes
// the app registered: each is described, and each lists the refusals that
// come before its handler, in the error envelope: 401 where credentials
// are needed, 403 where the role needed is above viewer or a console write
// needs its CSRF token, 413 and 415 where a body is taken (limitBody), and
// 429 where the engine guards the route. The roles are routePolicy's,
// docs/api.md's; whether a route is guarded is read from its handlers.
func TestSpecDocumentsEveryRefusal(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	var doc specDoc
	if err := json.Unmarshal(servedSpec(t, ts), &doc); err != nil {
		t.Fatal(err)
	}
	// Every guard handler is the same method value, so its code pointer
	// tells it among a route's handlers.
	guardCode := reflect.ValueOf(ts.guard()).Pointer()

	described := map[string]bool{}
	ids := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			key := strings.ToUpper(method) + " " + path
			described[key] = true
			if op.ID == "" {
				t.Errorf("%s: no operationId", key)
			} else if other, dup := ids[op.ID]; dup {
				t.Errorf("%s: operationId %q is %s's too", key, op.ID, other)
			}
			ids[op.ID] = key
			for code, resp := range op.Responses {
				status, _ := strconv.Atoi(code)
				want := "#/definitions/server.ErrorResponse"
				if key == "GET /api/v1/health" && status == http.StatusServiceUnavailable {
					want = "#/definitions/server.HealthResponse"
				}
				if status >= 400 && resp.Schema.Ref != want {
					t.Errorf("%s %s: schema %q, want %q", key, code, resp.Schema.Ref, want)
				}
			}
		}
	}

	registered := map[string]bool{}
	for _, route := range ts.app.GetRoutes(true) {
		if route.Method == http.MethodHead || !strings.HasPrefix(route.Path, apiPrefix) && route.Path != "/metrics" {
			continue
		}
		key := route.Method + " " + fiberParam.ReplaceAllString(route.Path, "{$1}")
		registered[key] = true
		op, ok := doc.Paths[fiberParam.ReplaceAllString(route.Path, "{$1}")][strings.ToLower(route.Method)]
		if !ok {
			t.Errorf("%s: registered but not in the spec", key)
			continue
		}
		role, public := routePolicy[route.Method+" "+route.Path], false
		switch {
		case route.Path == "/metrics":
			role = roleViewer // any credential, unless --public-metrics
		case role == "":
			public = true
		}
		guarded := slices.ContainsFunc(route.Handlers, func(h fiber.Handler) bool {
			return reflect.ValueOf(h).Pointer() == guardCode
		})
		takesBody := route.Method == http.MethodPost || route.Method == http.MethodPut || route.Method == http.MethodPatch
		// A console session's write needs its CSRF token (auth.middleware).
		write := !safeMethod(route.Method)

		wantSecurity := `[{"BearerAuth":[]}]`
		if public {
			wantSecurity = `[]`
		}
		if got, _ := json.Marshal(op.Security); string(got) != wantSecurity {
			t.Errorf("%s: security %s, want %s", key, got, wantSecurity)
		}
		want := map[int]bool{
			http.StatusUnauthorized:          !public,
			http.StatusForbidden:             role == roleEditor || role == roleAdmin || !public && write,
			http.StatusRequestEntityTooLarge: takesBody,
			http.StatusUnsupportedMediaType:  takesBody,
			http.StatusTooManyRequests:       guarded,
		}
		for status, needed := range want {
			if _, listed := op.Responses[strconv.Itoa(status)]; needed && !listed {
				t.Errorf("%s: the spec lacks %d", key, status)
			}
		}
	}
	for key := range described {
		if !registered[key] {
			t.Errorf("%s: in the spec but no such route is registered", key)
		}
	}
}

// validatorsDir is where make tools installs the OpenAPI validators.
const validatorsDir = "../.tools/node_modules/.bin"

// TestServedSpecPassesValidators runs two OpenAPI validators on the
// document a real listener serves: swagger-cli's validate (the Swagger 2.0
// schema and its references) and Redocly's recommended rules, failing on
// any error either reports.
func TestServedSpecPassesValidators(t *testing.T) {
	t.Parallel()
	spec := filepath.Join(t.TempDir(), "swagger.json")
	if err := os.WriteFile(spec, servedSpec(t, startServer(t, nil, nil)), 0o600); err != nil {
		t.Fatal(err)
	}
	validators := []struct {
		name string
		args []string
	}{
		{name: "swagger-cli", args: []string{"validate", spec}},
		{name: "redocly", args: []string{"lint", "--extends", "recommended", "--format", "stylish", spec}},
	}
	for _, v := range validators {
		t.Run(v.name, func(t *testing.T) {
			bin := filepath.Join(validatorsDir, v.name)
			if _, err := os.Stat(bin); err != nil {
				t.Fatalf("%s is not installed (%v): run make tools", v.name, err)
			}
			cmd := exec.CommandContext(t.Context(), bin, v.args...)
			cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s %s: %v\n%s", v.name, strings.Join(v.args, " "), err, out)
			}
		})
	}
}
