package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
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
			dir := t.TempDir()
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(a, "{dir}", dir)
			}
			for k, v := range tt.env {
				t.Setenv(k, strings.ReplaceAll(v, "{dir}", dir))
			}
			t.Setenv("SLUICE_BOOTSTRAP_TOKEN", cliToken)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var stdout, stderr syncBuffer
			done := make(chan error, 1)
			go func() { done <- run(ctx, args, &stdout, &stderr) }()

			var addr string
			waitFor(t, "the listening log line", 10*time.Second, func() bool {
				select {
				case err := <-done:
					t.Fatalf("run returned early: %v\n%s", err, stderr.String())
				default:
				}
				if m := listeningAddr.FindStringSubmatch(stderr.String()); m != nil {
					addr = m[1]
				}
				return addr != ""
			})
			client := &http.Client{Timeout: 2 * time.Second}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/rules?q=demo-", nil)
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
			if err != nil || list.Total != 5 {
				t.Errorf("demo rules: %d (%v), want 5", list.Total, err)
			}
			if !strings.Contains(stderr.String(), "demo: driving synthetic traffic") {
				t.Errorf("the log does not say the demo runs:\n%s", stderr.String())
			}

			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("run after cancel = %v\n%s", err, stderr.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatal("run did not return after cancel")
			}
		})
	}
}

func TestEntryLeaseMustBePositive(t *testing.T) {
	for _, lease := range []string{"0s", "-1s"} {
		t.Run(lease, func(t *testing.T) {
			var stdout, stderr syncBuffer
			err := run(t.Context(), []string{"--entry-lease", lease, "--db", t.TempDir() + "/x.db"}, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), "--entry-lease") {
				t.Errorf("run = %v, want an error naming --entry-lease", err)
			}
		})
	}
}
