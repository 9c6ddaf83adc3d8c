package server

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

const testVersion = "1.2.3-test"

// testServer is a Server that servertest runs for a test: a real listener
// and a real SQLite file.
type testServer struct {
	*Server
	*servertest.Node
}

// startServer starts a server for a test. configure changes the Config
// before New (its limits, say); ready changes the server before it serves
// (a route of the test's own, a faster stream).
func startServer(t testing.TB, configure func(cfg *Config), ready func(srv *Server), opts ...servertest.Option) *testServer {
	t.Helper()
	ts := &testServer{}
	ts.Node = servertest.Start(t, func(env servertest.Env) (servertest.Server, error) {
		cfg := Config{
			Engine: env.Engine, Store: env.Store, Version: testVersion, Logger: env.Logger,
			BootstrapToken: servertest.AdminToken, PasswordCost: bcrypt.MinCost,
		}
		if configure != nil {
			configure(&cfg)
		}
		srv, err := New(t.Context(), cfg)
		if err != nil {
			return nil, err
		}
		if ready != nil {
			ready(srv)
		}
		ts.Server = srv
		return srv, nil
	}, opts...)
	return ts
}

var client = &http.Client{Timeout: 10 * time.Second}

// decodeEnvelope checks that body is exactly the error envelope, with
// details an array, and returns it.
func decodeEnvelope(t *testing.T, resp *http.Response, body []byte) ErrorBody {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != fiber.MIMEApplicationJSONCharsetUTF8 {
		t.Errorf("Content-Type = %q, want %q", ct, fiber.MIMEApplicationJSONCharsetUTF8)
	}
	var raw struct {
		Error struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("body is not the error envelope: %v\n%s", err, body)
	}
	if !bytes.HasPrefix(raw.Error.Details, []byte("[")) {
		t.Errorf("details = %s, want an array", raw.Error.Details)
	}
	if raw.Error.Message == "" {
		t.Errorf("message is empty in %s", body)
	}
	var details []FieldError
	if err := json.Unmarshal(raw.Error.Details, &details); err != nil {
		t.Fatalf("details: %v", err)
	}
	return ErrorBody{Code: raw.Error.Code, Message: raw.Error.Message, Details: details}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// spoil does to the running server's database at path what the
		// case is about.
		spoil      func(t *testing.T, n *testServer, path string)
		wantStatus int
		want       HealthResponse
	}{
		{
			name:       "database up",
			wantStatus: http.StatusOK,
			want:       HealthResponse{Status: "ok", Version: testVersion, DB: "ok"},
		},
		{
			name: "database closed",
			spoil: func(t *testing.T, n *testServer, _ string) {
				if err := n.Store.Close(); err != nil {
					t.Fatal(err)
				}
				// The last flush cannot write the minute's heartbeat.
				t.Cleanup(func() {
					n.StopWith(t, func(ctx context.Context) error {
						if err := n.Shutdown(ctx); err == nil {
							t.Error("Shutdown on a closed database reported no error")
						}
						return nil
					})
				})
			},
			wantStatus: http.StatusServiceUnavailable,
			want:       HealthResponse{Status: "unavailable", Version: testVersion, DB: "unreachable"},
		},
		{
			// A ping that only reads would answer ok; health waits the
			// busy timeout (5 s) for the write lock, as a write would.
			name: "another process holds the write lock",
			// On PostgreSQL: the database ends the server's connections
			// and refuses new ones.
			spoil: func(t *testing.T, _ *testServer, path string) {
				if servertest.OnPostgres() {
					servertest.RefuseDatabase(t, path)
					return
				}
				holdWriteLock(t, path)
			},
			wantStatus: http.StatusServiceUnavailable,
			want:       HealthResponse{Status: "unavailable", Version: testVersion, DB: "unreachable"},
		},
		{
			// The server's connection opened the file for writing
			// before, and a transaction goes to the WAL still, so a
			// write probe that rolls back answers ok; but no checkpoint
			// can reach the file, and a restart opens it read-only.
			name: "the file made immutable",
			spoil: func(t *testing.T, _ *testServer, path string) {
				if servertest.OnPostgres() {
					t.Skip("a SQLite file's attribute")
				}
				makeImmutable(t, path)
			},
			wantStatus: http.StatusServiceUnavailable,
			want:       HealthResponse{Status: "unavailable", Version: testVersion, DB: "unreachable"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sluice.db")
			n := startServer(t, nil, nil, servertest.DBPath(path))
			if tt.spoil != nil {
				tt.spoil(t, n, path)
			}

			resp, body := n.Do(t, http.MethodGet, "/api/v1/health", nil)

			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d (%s)", resp.StatusCode, tt.wantStatus, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != fiber.MIMEApplicationJSONCharsetUTF8 {
				t.Errorf("Content-Type = %q, want %q", ct, fiber.MIMEApplicationJSONCharsetUTF8)
			}
			var got HealthResponse
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("decoding %s: %v", body, err)
			}
			if got != tt.want {
				t.Errorf("body = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// makeImmutable sets the immutable attribute of the SQLite file at path
// (chattr +i, which needs root and a file system that has it: else the
// test is skipped), until the test ends.
func makeImmutable(t *testing.T, path string) {
	t.Helper()
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		t.Skipf("chattr +i %s: %v %s", path, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("chattr", "-i", path).CombinedOutput(); err != nil {
			t.Errorf("chattr -i %s: %v %s", path, err, out)
		}
	})
}

// holdWriteLock takes the write lock of the SQLite file at path from a
// connection of its own, as another process would, until the test ends.
func holdWriteLock(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Error(err)
		}
		_ = conn.Close()
		_ = db.Close()
	})
}

func TestFiberErrorsUseTheEnvelope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		send       func(t *testing.T, ts *testServer) (*http.Response, []byte)
		wantStatus int
		wantCode   string
		wantHeader [2]string
	}{
		{
			name: "unknown API route",
			send: func(t *testing.T, ts *testServer) (*http.Response, []byte) {
				return ts.Do(t, http.MethodGet, "/api/v1/no-such-thing", nil)
			},
			wantStatus: http.StatusNotFound,
			wantCode:   "not_found",
		},
		{
			name: "unknown console file",
			send: func(t *testing.T, ts *testServer) (*http.Response, []byte) {
				return ts.Do(t, http.MethodGet, "/no-such-page.html", nil)
			},
			wantStatus: http.StatusNotFound,
			wantCode:   "not_found",
		},
		{
			name: "wrong method on a known route",
			send: func(t *testing.T, ts *testServer) (*http.Response, []byte) {
				return ts.Do(t, http.MethodDelete, "/api/v1/health", nil)
			},
			wantStatus: http.StatusMethodNotAllowed,
			wantCode:   "method_not_allowed",
			wantHeader: [2]string{"Allow", "GET"},
		},
		{
			name: "body over 1 MiB",
			send: func(t *testing.T, ts *testServer) (*http.Response, []byte) {
				return ts.Do(t, http.MethodPost, "/api/v1/rules", bytes.NewReader(bytes.Repeat([]byte(" "), maxBodyBytes+1)))
			},
			wantStatus: http.StatusRequestEntityTooLarge,
			wantCode:   "payload_too_large",
		},
		{
			name: "body too large to read",
			send: func(t *testing.T, ts *testServer) (*http.Response, []byte) {
				return ts.DoRaw(t, fmt.Sprintf("POST /api/v1/health HTTP/1.1\r\nHost: sluice\r\n"+
					"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", drainBodyBytes+1, strings.Repeat(" ", 8<<10)))
			},
			wantStatus: http.StatusRequestEntityTooLarge,
			wantCode:   "payload_too_large",
		},
	}
	ts := startServer(t, nil, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, got := tt.send(t, ts)

			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d (%s)", resp.StatusCode, tt.wantStatus, got)
			}
			if e := decodeEnvelope(t, resp, got); e.Code != tt.wantCode {
				t.Errorf("code = %q, want %q", e.Code, tt.wantCode)
			}
			if name := tt.wantHeader[0]; name != "" && !strings.Contains(resp.Header.Get(name), tt.wantHeader[1]) {
				t.Errorf("%s = %q, want it to contain %q", name, resp.Header.Get(name), tt.wantHeader[1])
			}
		})
	}
}

func TestHandlerErrorsUseTheEnvelope(t *testing.T) {
	t.Parallel()
	const secretErr = "open /var/lib/secret.db: permission denied"
	const secretPanic = "assignment to entry in nil map in the secret handler"
	tests := []struct {
		name        string
		err         error
		panicWith   any
		wantStatus  int
		wantCode    string
		wantDetails []FieldError
		wantLogged  []string
	}{
		{
			name:        "validation failed",
			err:         ValidationFailed("the rule is not valid", FieldError{Field: "threshold", Message: "must be >= 0"}),
			wantStatus:  http.StatusUnprocessableEntity,
			wantCode:    "validation_failed",
			wantDetails: []FieldError{{Field: "threshold", Message: "must be >= 0"}},
		},
		{
			name:        "bad request",
			err:         BadRequest("bad query parameter", FieldError{Field: "step", Message: "must be one of 1m, 5m"}),
			wantStatus:  http.StatusBadRequest,
			wantCode:    "bad_request",
			wantDetails: []FieldError{{Field: "step", Message: "must be one of 1m, 5m"}},
		},
		{name: "not found", err: NotFound("no rule 7"), wantStatus: http.StatusNotFound, wantCode: "not_found"},
		{name: "conflict", err: Conflict("name taken"), wantStatus: http.StatusConflict, wantCode: "conflict"},
		{name: "stale If-Match", err: PreconditionFailed("version 3 is stale"), wantStatus: http.StatusPreconditionFailed, wantCode: "precondition_failed"},
		{name: "unauthorized", err: NewError(http.StatusUnauthorized, "no credentials"), wantStatus: http.StatusUnauthorized, wantCode: "unauthorized"},
		{name: "forbidden", err: NewError(http.StatusForbidden, "role too low"), wantStatus: http.StatusForbidden, wantCode: "forbidden"},
		{name: "throttled", err: NewError(http.StatusTooManyRequests, "slow down"), wantStatus: http.StatusTooManyRequests, wantCode: "too_many_requests"},
		{name: "status outside docs/api.md", err: NewError(http.StatusRequestTimeout, "too slow"), wantStatus: http.StatusRequestTimeout, wantCode: "request_timeout"},
		{name: "wrapped API error", err: fmt.Errorf("create rule: %w", Conflict("name taken")), wantStatus: http.StatusConflict, wantCode: "conflict"},
		{
			name:       "unknown error",
			err:        errors.New(secretErr),
			wantStatus: http.StatusInternalServerError,
			wantCode:   "internal",
			wantLogged: []string{secretErr},
		},
		{
			name:       "panic",
			panicWith:  secretPanic,
			wantStatus: http.StatusInternalServerError,
			wantCode:   "internal",
			wantLogged: []string{secretPanic, "runtime/debug.Stack"},
		},
	}
	ts := startServer(t, nil, func(srv *Server) {
		for i, tt := range tests {
			srv.app.Post("/test/"+strconv.Itoa(i), func(*fiber.Ctx) error {
				if tt.panicWith != nil {
					panic(tt.panicWith)
				}
				return tt.err
			})
		}
	})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := ts.Do(t, http.MethodPost, "/test/"+strconv.Itoa(i), nil)

			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d (%s)", resp.StatusCode, tt.wantStatus, body)
			}
			e := decodeEnvelope(t, resp, body)
			if e.Code != tt.wantCode {
				t.Errorf("code = %q, want %q", e.Code, tt.wantCode)
			}
			if len(e.Details) != len(tt.wantDetails) {
				t.Fatalf("details = %+v, want %+v", e.Details, tt.wantDetails)
			}
			for j := range e.Details {
				if e.Details[j] != tt.wantDetails[j] {
					t.Errorf("details[%d] = %+v, want %+v", j, e.Details[j], tt.wantDetails[j])
				}
			}
			if tt.wantLogged == nil {
				return
			}
			logs := ts.Logs()
			for _, want := range tt.wantLogged {
				if strings.Contains(string(body), want) {
					t.Errorf("the answer leaks %q: %s", want, body)
				}
				if !strings.Contains(logs, want) {
					t.Errorf("logs lack %q:\n%s", want, logs)
				}
			}
		})
	}
}

func TestConsoleAndSwaggerAreServed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path            string
		wantContentType string
		wantBody        string
	}{
		{path: "/", wantContentType: "text/html", wantBody: "Sluice console"},
		{path: "/index.html", wantContentType: "text/html", wantBody: "/swagger/index.html"},
		{path: "/console.css", wantContentType: "text/css", wantBody: "font-family"},
		{path: "/swagger/index.html", wantContentType: "text/html", wantBody: "swagger-ui"},
		{path: "/swagger/doc.json", wantContentType: "application/json", wantBody: `"title": "Sluice API"`},
	}
	ts := startServer(t, nil, nil)
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := ts.Do(t, http.MethodGet, tt.path, nil)

			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, want 200 (%s)", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.wantContentType) {
				t.Errorf("Content-Type = %q, want %s", ct, tt.wantContentType)
			}
			if !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("body lacks %q:\n%s", tt.wantBody, body)
			}
		})
	}
}

func TestSwaggerDocDescribesHealth(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	resp, body := ts.Do(t, http.MethodGet, "/swagger/doc.json", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
	var doc struct {
		BasePath string                     `json:"basePath"`
		Paths    map[string]json.RawMessage `json:"paths"`
		Security map[string]struct {
			Type string `json:"type"`
			In   string `json:"in"`
			Name string `json:"name"`
		} `json:"securityDefinitions"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("doc.json: %v", err)
	}
	// The base is the root, so that /metrics, outside /api/v1, is
	// described beside the API.
	if doc.BasePath != "/" {
		t.Errorf("basePath = %q, want /", doc.BasePath)
	}
	if _, ok := doc.Paths["/api/v1/health"]; !ok {
		t.Errorf("paths lack /api/v1/health: %v", doc.Paths)
	}
	if got := doc.Security["BearerAuth"]; got.Type != "apiKey" || got.In != "header" || got.Name != "Authorization" {
		t.Errorf("securityDefinitions.BearerAuth = %+v, want an apiKey in the Authorization header", got)
	}
}

func TestNewRequiresEngineAndStore(t *testing.T) {
	t.Parallel()
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "sluice.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	eng := engine.New(engine.Options{})
	t.Cleanup(eng.Close)

	tests := []struct {
		name string
		cfg  Config
	}{
		{name: "no engine", cfg: Config{Store: st}},
		{name: "no store", cfg: Config{Engine: eng}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(t.Context(), tt.cfg); err == nil {
				t.Error("New succeeded, want an error")
			}
		})
	}
}

func TestServeAfterShutdownReturnsAtOnce(t *testing.T) {
	t.Parallel()
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "sluice.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	eng := engine.New(engine.Options{})
	t.Cleanup(eng.Close)
	srv, err := New(t.Context(), Config{Engine: eng, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after Shutdown = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve after Shutdown is still serving")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts connections")
	}
}
