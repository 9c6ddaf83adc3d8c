package main

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
)

var overflowTotal = regexp.MustCompile(`(?m)^sluice_resource_overflow_total (\d+)$`)

// TestResourceBoundsReachTheEngine: --max-resources and its environment
// twin cap the engine: with room for one resource, the API's own route
// takes it and checks on new names are counted under (overflow).
func TestResourceBoundsReachTheEngine(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{name: "flags", args: []string{"--addr", "127.0.0.1:0", "--db", "{dir}/x.db", "--max-resources", "1", "--resource-idle-ttl", "2h"}},
		{
			name: "environment twins",
			env: map[string]string{"SLUICE_MAX_RESOURCES": "1", "SLUICE_RESOURCE_IDLE_TTL": "90m",
				"SLUICE_ADDR": "127.0.0.1:0", "SLUICE_DB": "{dir}/x.db"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SLUICE_BOOTSTRAP_TOKEN", cliToken)
			r := startSluice(t, t.TempDir(), tt.args, tt.env)
			client := &http.Client{Timeout: 2 * time.Second}
			call := func(method, path, body string) string {
				t.Helper()
				req, err := http.NewRequestWithContext(t.Context(), method, "http://"+r.addr+path, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+cliToken)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				out, err := io.ReadAll(resp.Body)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("%s %s: %d %v\n%s", method, path, resp.StatusCode, err, out)
				}
				return string(out)
			}
			for _, name := range []string{"a", "b"} {
				call(http.MethodPost, "/api/v1/check", `{"resource": "`+name+`"}`)
			}
			m := overflowTotal.FindStringSubmatch(call(http.MethodGet, "/metrics", ""))
			if m == nil {
				t.Fatal("/metrics has no sluice_resource_overflow_total")
			}
			if n, _ := strconv.Atoi(m[1]); n < 2 {
				t.Errorf("sluice_resource_overflow_total %d, want the 2 checks at least", n)
			}
			r.stop(t)
		})
	}
}

func TestResourceBoundsMustBePositive(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "no resources", args: []string{"--max-resources", "0"}, wantErr: "--max-resources"},
		{name: "resources from the environment", env: map[string]string{"SLUICE_MAX_RESOURCES": "-5"}, wantErr: "--max-resources"},
		{name: "resources not a number", args: []string{"--max-resources", "many"}, wantErr: "max-resources"},
		{name: "no instances", args: []string{"--max-instances", "0"}, wantErr: "--max-instances"},
		{name: "instances from the environment", env: map[string]string{"SLUICE_MAX_INSTANCES": "-1"}, wantErr: "--max-instances"},
		{name: "no idle time", args: []string{"--resource-idle-ttl", "0s"}, wantErr: "--resource-idle-ttl"},
		{name: "idle time from the environment", env: map[string]string{"SLUICE_RESOURCE_IDLE_TTL": "-1m"}, wantErr: "--resource-idle-ttl"},
		{name: "idle time not a duration", args: []string{"--resource-idle-ttl", "1 hour"}, wantErr: "resource-idle-ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stdout, stderr servertest.SyncBuffer
			err := run(t.Context(), append(tt.args, "--db", t.TempDir()+"/x.db"), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("run = %v, want an error naming %s", err, tt.wantErr)
			}
		})
	}
}
