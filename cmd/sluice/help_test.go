package main

import (
	"strings"
	"testing"
)

func TestHelp(t *testing.T) {
	program := []string{
		"sluice [serve] [flags]", "sluice demo [flags]", "sluice rules apply -f FILE", "sluice rules import -f FILE", "sluice rules export", "sluice admin reset-password USER",
		"sluice help [command]", "Exit codes: 0 success, 1 an error",
		"Flags of serve and demo:", "-addr string", "-db string", "-bootstrap-token string", "-version",
	}
	rulesCommands := []string{"sluice rules apply -f FILE", "sluice rules import -f FILE", "sluice rules export", "Flags of all:", "-server string", "-token string", "-timeout duration"}
	apply := []string{"Usage: sluice rules apply -f FILE [flags]", "2 a dry run found changes", "-f string", "-dry-run", "-prune", "-reason string", "-server string", "-token string"}
	importUsage := []string{"Usage: sluice rules import -f FILE --format sentinel|envoy [flags]", "2 a dry run found changes", "-f string", "-format string", "-kind string", "-app string", "-dry-run", "-reason string", "-server string"}
	export := []string{"Usage: sluice rules export [flags]", "-format string", "-o string", "-server string", "-token string"}
	adminCommands := []string{"sluice admin reset-password USER [flags]", "work on the database file directly", "-db string", "-password string"}
	resetPassword := []string{"Usage: sluice admin reset-password USER [flags]", "an unknown user included", "-db string", "-password string"}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, program},
		{[]string{"-h"}, program},
		{[]string{"help"}, program},
		{[]string{"help", "help"}, program},
		{[]string{"serve", "--help"}, program},
		{[]string{"help", "serve"}, program},
		{[]string{"demo", "-h"}, program},
		{[]string{"help", "rules"}, rulesCommands},
		{[]string{"rules", "--help"}, rulesCommands},
		{[]string{"rules", "-h"}, rulesCommands},
		{[]string{"help", "rules", "apply"}, apply},
		{[]string{"rules", "apply", "--help"}, apply},
		{[]string{"rules", "apply", "-f", "rules.yaml", "--dry-run", "-h"}, apply},
		{[]string{"help", "rules", "import"}, importUsage},
		{[]string{"rules", "import", "--help"}, importUsage},
		{[]string{"help", "rules", "export"}, export},
		{[]string{"rules", "export", "--help"}, export},
		{[]string{"help", "admin"}, adminCommands},
		{[]string{"admin", "--help"}, adminCommands},
		{[]string{"help", "admin", "reset-password"}, resetPassword},
		{[]string{"admin", "reset-password", "admin", "-h"}, resetPassword},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runProcess(t, tt.args...)

			if code != 0 || stderr != "" {
				t.Errorf("exit code %d, standard error %q; want 0 and nothing", code, stderr)
			}
			for _, want := range tt.want {
				if !strings.Contains(stdout, want) {
					t.Errorf("standard output lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

// TestUsageErrors: a command or flag sluice does not know is an error,
// exit code 1 like any other (2 is a dry run's drift, which a pipeline
// lets through), with the usage on standard error.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"frobnicate"}, []string{"sluice rules apply -f FILE", "sluice help [command]", `sluice: unknown command "frobnicate"`}},
		{[]string{"help", "frobnicate"}, []string{"sluice help [command]", `sluice: unknown command "frobnicate"`}},
		{[]string{"rules"}, []string{"sluice rules export [flags]", "-server string", "sluice: rules: want a command, apply, import or export\n"}},
		{[]string{"rules", "delete"}, []string{"sluice rules export [flags]", `sluice: rules: unknown command "delete", want apply, import or export`}},
		{[]string{"help", "rules", "delete"}, []string{`sluice: rules: unknown command "delete"`}},
		{[]string{"rules", "apply", "--dry-run", "--no-such-flag"}, []string{"Usage: sluice rules apply", "-prune", "flag provided but not defined: -no-such-flag"}},
		{[]string{"rules", "export", "extra"}, []string{"Usage: sluice rules export", "unexpected arguments: extra"}},
		{[]string{"--no-such-flag"}, []string{"Flags of serve and demo:", "-addr string", "flag provided but not defined: -no-such-flag"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runProcess(t, tt.args...)

			if code != 1 || stdout != "" {
				t.Errorf("exit code %d, standard output %q; want 1 and nothing", code, stdout)
			}
			for _, want := range tt.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("standard error lacks %q:\n%s", want, stderr)
				}
			}
			if n := strings.Count(stderr, "sluice:"); n != 1 {
				t.Errorf("standard error says the error %d times, want once:\n%s", n, stderr)
			}
		})
	}
}
