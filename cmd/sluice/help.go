package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/peterbourgon/ff/v3"
)

// programUsage lists the commands. It heads serve's usage (serve is the
// default command, so "sluice -h" is "sluice serve -h") and is what an
// unknown command prints.
const programUsage = `Sluice: flow control for your services, with its control plane.

Usage:
  sluice [serve] [flags]               run the control plane (the default command)
  sluice demo [flags]                  serve, seeding demo rules and driving synthetic traffic through them
  sluice rules apply -f FILE [flags]   make a server's rules those of FILE; --dry-run only shows the plan
  sluice rules import -f FILE [flags]  apply a sentinel-golang or envoyproxy/ratelimit file (--format) as rules
  sluice rules export [flags]          write a server's rules as a file that rules apply takes
  sluice admin reset-password USER     set USER's password in the database and end their sessions (a lost admin password)
  sluice help [command]                show a command's usage and flags (help rules apply)

Every flag has an environment twin: --addr is SLUICE_ADDR, --token is SLUICE_TOKEN.
Exit codes: 0 success, 1 an error (a usage error included), 2 a dry run of
rules apply or rules import that found changes to make.
`

// isHelpFlag reports whether arg asks for help the way the flag package
// understands it.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

// help runs "sluice help [command]": "sluice help rules apply" is
// "sluice rules apply --help", and the program's usage is serve's.
func help(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || isHelpFlag(args[0]) {
		args = []string{"serve"}
	}
	return dispatch(ctx, args[0], append(slices.Clip(args[1:]), "--help"), stdout, stderr)
}

// printUsage writes text, which ends with the heading of the flags, and
// then the flags of fs.
func printUsage(w io.Writer, text string, fs *flag.FlagSet) {
	fmt.Fprint(w, text)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// parseFlags parses args into fs, environment twins included, and refuses
// stray arguments. Asked for help, it prints the usage (text and flags) on
// stdout and returns flag.ErrHelp, which run turns into exit code 0; on a
// bad flag it prints the usage on stderr and returns the error.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) error {
	// The flag package would print the error and the usage on its own
	// output, the error then printed again by main.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := ff.Parse(fs, args, ff.WithEnvVarPrefix("SLUICE"))
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stdout, usage, fs)
		return err
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if err != nil {
		printUsage(stderr, usage, fs)
	}
	return err
}
