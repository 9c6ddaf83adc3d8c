package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
)

var pprofListeningAddr = regexp.MustCompile(`msg="listening for pprof" addr=(\S+)`)

// TestRunServesPprofWhenAsked: --pprof-addr serves the profiles, but not
// the command line, which may carry secrets.
func TestRunServesPprofWhenAsked(t *testing.T) {
	r := startSluice(t, t.TempDir(), []string{"--addr", "127.0.0.1:0", "--db", "{dir}/pprof.db"},
		map[string]string{"SLUICE_PPROF_ADDR": "127.0.0.1:0", "SLUICE_BOOTSTRAP_TOKEN": "slc_pprof_secret_token_value"})
	var addr string
	servertest.WaitUntil(t, "the pprof listening log line", 10*time.Second, func() bool {
		if m := pprofListeningAddr.FindStringSubmatch(r.stderr.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	if code, body := get("/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Errorf("heap profile: %d %.80q", code, body)
	}
	if code, body := get("/debug/pprof/cmdline"); code != http.StatusNotFound || strings.Contains(body, "slc_pprof") {
		t.Errorf("the command line is served: %d %.80q", code, body)
	}
	r.stop(t)
}

func TestRunRefusesAPprofAddrOffLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:6060", "example.com:6060"} {
		_, stderr, code := runProcess(t, "--addr", "127.0.0.1:0", "--db", t.TempDir()+"/pprof.db", "--pprof-addr", addr)
		if code == 0 || !strings.Contains(stderr, "must be a loopback address") {
			t.Errorf("--pprof-addr %s: exit %d, stderr %q; want a refusal", addr, code, stderr)
		}
	}
}
