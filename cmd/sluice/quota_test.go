package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
)

// sluiceProcess is sluice running as a process of its own.
type sluiceProcess struct {
	cmd    *exec.Cmd
	url    string
	stderr *servertest.SyncBuffer
}

// startProcess runs sluice as a process on args and waits until it listens.
func startProcess(t *testing.T, args ...string) *sluiceProcess {
	t.Helper()
	p := &sluiceProcess{stderr: &servertest.SyncBuffer{}}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), runMainEnv+"=1")
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	servertest.WaitUntil(t, "the listening log line", 20*time.Second, func() bool {
		if m := listeningAddr.FindStringSubmatch(p.stderr.String()); m != nil {
			p.url = "http://" + m[1]
		}
		return p.url != ""
	})
	return p
}

// end sends sig to the process and waits for it to exit.
func (p *sluiceProcess) end(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if sig == syscall.SIGTERM && err != nil {
			t.Fatalf("sluice after SIGTERM: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("sluice did not exit after %v", sig)
	}
}

// do sends a JSON request with the admin token and returns the status and
// decoded answer.
func (p *sluiceProcess) do(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, p.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+quotaTestToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	_ = json.Unmarshal(buf.Bytes(), &out)
	return resp.StatusCode, out
}

// check asks for count calls to resource and reports whether they passed.
func (p *sluiceProcess) check(t *testing.T, resource string, count int) bool {
	t.Helper()
	status, out := p.do(t, http.MethodPost, "/api/v1/check", `{"resource":"`+resource+`","count":`+jsonInt(count)+`}`)
	if status != http.StatusOK {
		t.Fatalf("check: %d %v", status, out)
	}
	return out["allowed"] == true
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

const quotaTestToken = "slc_quota_test_token_0123456789abcdef"

// TestADayQuotaSurvivesARestart runs sluice as a real process: a day
// quota of 10,000 with 6,000 passed keeps its count across a shutdown
// (SIGTERM saves the windows) and across a kill after the periodic save
// (SIGKILL), so that only 4,000 more pass, in all, that day.
func TestADayQuotaSurvivesARestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sluice.db")
	args := []string{"--addr", "127.0.0.1:0", "--db", db, "--bootstrap-token", quotaTestToken}
	p := startProcess(t, args...)
	if status, out := p.do(t, http.MethodPost, "/api/v1/rules",
		`{"kind":"flow","name":"daily","resource":"reports","threshold":10000,"statIntervalMs":86400000}`); status != http.StatusCreated {
		t.Fatalf("create the rule: %d %v", status, out)
	}
	for range 6 {
		if !p.check(t, "reports", 1000) {
			t.Fatal("blocked under the quota")
		}
	}
	p.end(t, syscall.SIGTERM)

	p = startProcess(t, args...)
	if !p.check(t, "reports", 3000) {
		t.Fatal("3,000 more were blocked with 6,000 of 10,000 passed")
	}
	if p.check(t, "reports", 1001) {
		t.Fatal("after a restart, the day quota let 10,001 through: it forgot its count")
	}
	// Killed, not stopped: the periodic save is what survives.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	servertest.WaitUntil(t, "a periodic save with 9,000 passes", 30*time.Second, func() bool {
		return savedPasses(ctx, t, db) >= 9000
	})
	p.end(t, syscall.SIGKILL)

	p = startProcess(t, args...)
	if p.check(t, "reports", 1001) {
		t.Fatal("after a kill, the day quota let 10,001 through")
	}
	if !p.check(t, "reports", 1000) {
		t.Fatal("the last 1,000 of the day were blocked")
	}
	p.end(t, syscall.SIGTERM)
}

// savedPasses returns the passes of the saved quota windows in db.
func savedPasses(ctx context.Context, t *testing.T, db string) int64 {
	t.Helper()
	raw := openRaw(t, db)
	defer raw.Close()
	rows, err := raw.QueryContext(ctx, `SELECT spans FROM quota_windows`)
	if err != nil {
		return 0
	}
	defer rows.Close()
	var total int64
	for rows.Next() {
		var spans string
		if rows.Scan(&spans) != nil {
			return 0
		}
		var pairs [][2]int64
		if json.Unmarshal([]byte(spans), &pairs) != nil {
			return 0
		}
		for _, p := range pairs {
			total += p[1]
		}
	}
	return total
}
