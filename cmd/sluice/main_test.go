package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/server/servertest"
	"github.com/sluicehq/sluice/store"
)

// runMainEnv, set to 1, makes the test binary run the program (main, on
// the arguments it was started with) instead of the tests, so that a test
// can run sluice as a real process and read its exit code.
const runMainEnv = "SLUICE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	passwordCost = bcrypt.MinCost
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(servertest.Main(m))
}

var listeningAddr = regexp.MustCompile(`msg=listening addr=(\S+)`)

// runningSluice is the program running in the background, as a test
// started it with startSluice.
type runningSluice struct {
	addr   string
	stderr *servertest.SyncBuffer
	cancel context.CancelFunc
	done   chan error
}

// startSluice runs the program with args and env, "{dir}" in them replaced
// by dir, and waits until it listens.
func startSluice(t *testing.T, dir string, args []string, env map[string]string) *runningSluice {
	t.Helper()
	expanded := make([]string, len(args))
	for i, a := range args {
		expanded[i] = strings.ReplaceAll(a, "{dir}", dir)
	}
	for k, v := range env {
		t.Setenv(k, strings.ReplaceAll(v, "{dir}", dir))
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	r := &runningSluice{stderr: &servertest.SyncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- run(ctx, expanded, &servertest.SyncBuffer{}, r.stderr) }()
	servertest.WaitUntil(t, "the listening log line", 10*time.Second, func() bool {
		select {
		case err := <-r.done:
			t.Fatalf("run returned early: %v\n%s", err, r.stderr.String())
		default:
		}
		if m := listeningAddr.FindStringSubmatch(r.stderr.String()); m != nil {
			r.addr = m[1]
		}
		return r.addr != ""
	})
	return r
}

// stop cancels the program and fails the test unless it returns cleanly.
func (r *runningSluice) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("run after cancel = %v, want a clean exit\n%s", err, r.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

// runProcess runs sluice as a process of its own on args, waits for it to
// exit and returns its standard output, standard error and exit code.
func runProcess(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	var outBuf, errBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("sluice %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("sluice %s still ran after 20s, want it to exit\n%s", strings.Join(args, " "), errBuf.String())
	}
	return outBuf.String(), errBuf.String(), cmd.ProcessState.ExitCode()
}

func TestRunServesUntilCancelled(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{
			name: "flags",
			args: []string{"--addr", "127.0.0.1:0", "--db", "{dir}/flags.db"},
		},
		{
			name: "serve subcommand with environment twins",
			args: []string{"serve"},
			env:  map[string]string{"SLUICE_ADDR": "127.0.0.1:0", "SLUICE_DB": "{dir}/env.db", "SLUICE_LOG_LEVEL": "debug"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			r := startSluice(t, dir, tt.args, tt.env)
			addr := r.addr
			client := &http.Client{Timeout: 2 * time.Second}
			servertest.WaitUntil(t, "GET /api/v1/health to answer 200", 10*time.Second, func() bool {
				resp, err := client.Get("http://" + addr + "/api/v1/health")
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK
			})
			matches, err := filepath.Glob(filepath.Join(dir, "*.db"))
			if err != nil || len(matches) != 1 {
				t.Errorf("database files in %s = %v (%v), want the one named by --db or SLUICE_DB", dir, matches, err)
			}

			r.stop(t)
			if _, err := client.Get("http://" + addr + "/api/v1/health"); err == nil {
				t.Error("the server still answers after run returned")
			}
		})
	}
}

func TestRunVersion(t *testing.T) {
	var stdout, stderr servertest.SyncBuffer
	if err := run(t.Context(), []string{"--version"}, &stdout, &stderr); err != nil {
		t.Fatalf("run --version: %v", err)
	}
	if got := strings.TrimSpace(stdout.String()); got != version {
		t.Errorf("--version printed %q, want %q", got, version)
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "unknown command", args: []string{"frobnicate"}, wantErr: `unknown command "frobnicate"`},
		{name: "unknown flag", args: []string{"--no-such-flag"}, wantErr: "no-such-flag"},
		{name: "bad log level", args: []string{"--log-level", "loud", "--db", "{dir}/x.db"}, wantErr: "--log-level"},
		{name: "stray argument", args: []string{"serve", "extra"}, wantErr: "unexpected arguments: extra"},
		{name: "address in use", args: []string{"--addr", "{busy}", "--db", "{dir}/x.db"}, wantErr: "address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			busy := listenBusy(t)
			dir := t.TempDir()
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.NewReplacer("{dir}", dir, "{busy}", busy).Replace(a)
			}
			// Should run serve instead of failing, it returns nil once
			// ctx is done, which fails the test below.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var stdout, stderr servertest.SyncBuffer

			err := run(ctx, args, &stdout, &stderr)

			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("run(%q) = %v, want an error containing %q", args, err, tt.wantErr)
			}
			// Refused before the database: none is made, and no first
			// user's password is printed for it.
			if _, err := os.Stat(filepath.Join(dir, "x.db")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("run(%q) left a database: %v", args, err)
			}
			if strings.Contains(stderr.String(), "created the first user") {
				t.Errorf("run(%q) created a first user:\n%s", args, stderr.String())
			}
		})
	}
}

// TestASecondServerOnOneFileIsRefused: a second sluice on a SQLite file
// that a running one serves exits with an error naming the cause; two
// would each answer with rules the other's engine never loads.
func TestASecondServerOnOneFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "sluice.db")
	r := startSluice(t, dir, []string{"--addr", "127.0.0.1:0", "--db", db}, nil)
	defer r.stop(t)
	_, stderr, code := runProcess(t, "--addr", "127.0.0.1:0", "--db", db)
	if code != 1 || !strings.Contains(stderr, "another sluice server has this database open") {
		t.Errorf("a second server on %s: exit %d, stderr %q; want 1 and the cause", db, code, stderr)
	}
}

// listenBusy holds a port for the test's duration and returns its address.
func listenBusy(t *testing.T) string {
	t.Helper()
	lc := net.ListenConfig{}
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().String()
}

func TestServeRefusesADatabaseItCannotServe(t *testing.T) {
	tests := []struct {
		name string
		// prepare spoils the migrated database at path and returns the
		// --db value and the line sluice must print.
		prepare func(t *testing.T, path string) (db, wantLine string)
	}{
		{
			name: "schema newer than the binary",
			prepare: func(t *testing.T, path string) (string, string) {
				raw := openRaw(t, path)
				var binary int64
				if err := raw.QueryRowContext(t.Context(), `SELECT max(version_id) FROM goose_db_version`).Scan(&binary); err != nil {
					t.Fatal(err)
				}
				if _, err := raw.ExecContext(t.Context(),
					`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, true)`, binary+4); err != nil {
					t.Fatal(err)
				}
				return path, fmt.Sprintf("sluice: the database schema of %s is at version %d, newer than this binary's %d: run a newer sluice\n",
					path, binary+4, binary)
			},
		},
		{
			name: "opened read-only",
			prepare: func(t *testing.T, path string) (string, string) {
				db := "file:" + path + "?mode=ro"
				return db, "sluice: the database " + db + " cannot be written: attempt to write a readonly database\n"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sluice.db")
			st, err := store.Open(t.Context(), path, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			db, wantLine := tt.prepare(t, path)

			_, stderr, code := runProcess(t, "serve", "--addr", "127.0.0.1:0", "--db", db)

			if code != 1 {
				t.Errorf("exit code = %d, want 1\n%s", code, stderr)
			}
			if !strings.HasSuffix(stderr, wantLine) {
				t.Errorf("standard error ends with\n%s\nwant\n%s", stderr, wantLine)
			}
			if strings.Contains(stderr, "msg=listening") {
				t.Errorf("sluice listened before it refused the database:\n%s", stderr)
			}
		})
	}
}

// openRaw opens the SQLite file at path without the store, closed when the
// test ends.
func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
