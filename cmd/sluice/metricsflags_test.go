package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
)

func TestRetentionFlag(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		str     string
		wantErr bool
	}{
		{in: "30d", want: 30 * 24 * time.Hour, str: "30d"},
		{in: "1d", want: 24 * time.Hour, str: "1d"},
		{in: "720h", want: 720 * time.Hour, str: "30d"},
		{in: "90m", want: 90 * time.Minute, str: "1h30m0s"},
		{in: "0d", wantErr: true},
		{in: "-5h", wantErr: true},
		{in: "1.5d", wantErr: true},
		{in: "d", wantErr: true},
		{in: "month", wantErr: true},
		{in: "999999999d", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var r retentionFlag
			err := r.Set(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Set(%q) = nil, want an error", tt.in)
				}
				return
			}
			if err != nil || time.Duration(r) != tt.want || r.String() != tt.str {
				t.Errorf("Set(%q): %v, %v, %q; want %v, %q", tt.in, err, time.Duration(r), r.String(), tt.want, tt.str)
			}
		})
	}
}

func TestRunRejectsBadMetricsFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "retention of no days", args: []string{"--metrics-retention", "0d"}, wantErr: "metrics-retention"},
		{name: "retention from the environment", env: map[string]string{"SLUICE_METRICS_RETENTION": "soon"}, wantErr: "soon"},
		{name: "flush interval of zero", args: []string{"--metrics-flush-interval", "0s"}, wantErr: "--metrics-flush-interval"},
		{name: "flush interval from the environment", env: map[string]string{"SLUICE_METRICS_FLUSH_INTERVAL": "-1s"}, wantErr: "--metrics-flush-interval"},
		{name: "public metrics from the environment", env: map[string]string{"SLUICE_PUBLIC_METRICS": "maybe"}, wantErr: "public-metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := append([]string{"--addr", "127.0.0.1:0", "--db", t.TempDir() + "/x.db"}, tt.args...)
			var stdout, stderr servertest.SyncBuffer
			err := run(t.Context(), args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("run(%q) = %v, want an error containing %q", args, err, tt.wantErr)
			}
		})
	}
}
