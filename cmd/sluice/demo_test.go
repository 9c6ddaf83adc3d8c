package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
)

func TestDemo(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{name: "demo subcommand", args: []string{"demo", "--addr", "127.0.0.1:0", "--db", "{dir}/demo.db"}},
		{name: "demo flag", args: []string{"--demo", "--addr", "127.0.0.1:0", "--db", "{dir}/demo.db", "--entry-lease", "5s"}},
		{
			name: "environment twins",
			args: []string{"serve"},
			env: map[string]string{"SLUICE_DEMO": "true", "SLUICE_ENTRY_LEASE": "1m",
				"SLUICE_ADDR": "127.0.0.1:0", "SLUICE_DB": "{dir}/demo.db"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SLUICE_BOOTSTRAP_TOKEN", cliToken)
			r := startSluice(t, t.TempDir(), tt.args, tt.env)
			addr, stderr := r.addr, r.stderr
			client := &http.Client{Timeout: 2 * time.Second}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/api/v1/rules?q=demo-", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+cliToken)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var list struct {
				Total int `json:"total"`
			}
			err = json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			if err != nil || list.Total != 7 {
				t.Errorf("demo rules: %d (%v), want 7", list.Total, err)
			}
			servertest.WaitUntil(t, "the demo instances listed live", 10*time.Second, func() bool {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/api/v1/instances?app=shop", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+cliToken)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var instances struct {
					Items []struct{ State string }
				}
				if err := json.NewDecoder(resp.Body).Decode(&instances); err != nil {
					t.Fatal(err)
				}
				live := 0
				for _, it := range instances.Items {
					if it.State == "live" {
						live++
					}
				}
				return live == 3
			})
			if !strings.Contains(stderr.String(), "demo: driving synthetic traffic") {
				t.Errorf("the log does not say the demo runs:\n%s", stderr.String())
			}

			r.stop(t)
		})
	}
}

func TestEntryLeaseMustBePositive(t *testing.T) {
	for _, lease := range []string{"0s", "-1s"} {
		t.Run(lease, func(t *testing.T) {
			var stdout, stderr servertest.SyncBuffer
			err := run(t.Context(), []string{"--entry-lease", lease, "--db", t.TempDir() + "/x.db"}, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), "--entry-lease") {
				t.Errorf("run = %v, want an error naming --entry-lease", err)
			}
		})
	}
}
