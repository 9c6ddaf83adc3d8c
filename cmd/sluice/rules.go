package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/impact"
	"github.com/sluicehq/sluice/server/rules"
)

// exitError ends the program with its code (and, if set, its message).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// errDrift is a dry run that found changes to make: exit code 2, so that a
// pipeline can gate on it.
var errDrift = &exitError{code: 2}

// defaultRequestTimeout bounds one API call of the rules commands: an
// apply of 100,000 rules takes seconds, a server that hangs must not hold
// a pipeline for ever.
const defaultRequestTimeout = 5 * time.Minute

// rulesUsage is what "sluice rules" prints about itself.
const rulesUsage = `Usage:
  sluice rules apply -f FILE [flags]   make a server's rules those of FILE; --dry-run only shows the plan
  sluice rules import -f FILE [flags]  apply a sentinel-golang or envoyproxy/ratelimit file (--format) as rules
  sluice rules export [flags]          write a server's rules as a file that rules apply takes

Run "sluice help rules apply" (import, export) for a command's own flags.

Flags of all:
`

// rulesCommand runs "sluice rules apply|import|export".
func rulesCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	command, args := "", args
	if len(args) > 0 {
		command, args = args[0], args[1:]
	}
	switch command {
	case "apply":
		return rulesApply(ctx, args, stdout, stderr)
	case "import":
		return rulesImport(ctx, args, stdout, stderr)
	case "export":
		return rulesExport(ctx, args, stdout, stderr)
	}
	fs := flag.NewFlagSet("sluice rules", flag.ContinueOnError)
	var api apiFlags
	api.register(fs)
	if isHelpFlag(command) {
		printUsage(stdout, rulesUsage, fs)
		return flag.ErrHelp
	}
	printUsage(stderr, rulesUsage, fs)
	if command == "" {
		return errors.New("rules: want a command, apply, import or export")
	}
	return fmt.Errorf("rules: unknown command %q, want apply, import or export", command)
}

// apiFlags are the flags every API command shares.
type apiFlags struct {
	server  string
	token   string
	timeout time.Duration
}

func (a *apiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.server, "server", "http://localhost:8080", "the Sluice server's URL (env SLUICE_SERVER)")
	fs.StringVar(&a.token, "token", "", "API token, sent as a bearer token (env SLUICE_TOKEN)")
	fs.DurationVar(&a.timeout, "timeout", defaultRequestTimeout, "give up on the server after this long (env SLUICE_TIMEOUT)")
}

// rulesApplyUsage is what "sluice rules apply" prints about itself.
const rulesApplyUsage = `Usage: sluice rules apply -f FILE [flags]

Makes the server's rules those of FILE (YAML or JSON), matched by name: it
creates, updates and, with --prune, deletes them in one transaction, and
prints the plan. A prune that would delete every rule of an app, or of the
server, is refused unless --allow-empty is given. A dry run changes nothing, so a viewer token may ask for it.

With --output json the plan is printed as the API answers it (created,
updated with each field's from and to, deleted, unchanged), for CI bots.

Exit codes: 0 applied or nothing to do, 2 a dry run found changes to make,
1 an error (the server's message and each bad field are printed).

Flags:
`

func rulesApply(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sluice rules apply", flag.ContinueOnError)
	var api apiFlags
	api.register(fs)
	file := fs.String("f", "", "rule file, YAML or JSON ({\"rules\": [...]}); - reads standard input")
	dryRun := fs.Bool("dry-run", false, "only show the plan; exit 2 if it changes anything")
	prune := fs.Bool("prune", false, "delete the rules the file does not name")
	allowEmpty := fs.Bool("allow-empty", false, "with --prune, let it delete every rule of an app or of the server (refused otherwise)")
	output := fs.String("output", "text", "text: a readable diff; json: the plan as the server answers it, for bots")
	reason := fs.String("reason", "", "why, kept in each changed rule's history")
	if err := parseFlags(fs, args, rulesApplyUsage, stdout, stderr); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("sluice rules apply: -f is required")
	}
	if *output != "text" && *output != "json" {
		return errors.New("sluice rules apply: --output must be text or json")
	}
	body, err := readFileArg(*file)
	if err != nil {
		return err
	}
	query := url.Values{"dryRun": {strconv.FormatBool(*dryRun)}, "prune": {strconv.FormatBool(*prune)}, "allowEmpty": {strconv.FormatBool(*allowEmpty)}}
	// YAML is a superset of JSON: one content type reads both.
	header := http.Header{"Content-Type": {"application/yaml"}}
	if *reason != "" {
		header.Set("X-Change-Reason", *reason)
	}
	return postPlan(ctx, &api, "/api/v1/rules/apply?"+query.Encode(), header, body, *dryRun, *output, stdout)
}

// readFileArg reads the file a -f flag names; - is standard input.
func readFileArg(file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(file)
}

// postPlan sends body to path, a route that answers a plan, and writes
// the plan as output says (writePlan); a dry run that finds changes is
// errDrift.
func postPlan(ctx context.Context, api *apiFlags, path string, header http.Header, body []byte, dryRun bool, output string, stdout io.Writer) error {
	var plan rules.ApplyPlan
	if err := api.call(ctx, http.MethodPost, path, header, body, &plan); err != nil {
		return err
	}
	changes, err := writePlan(stdout, plan, output)
	if err != nil {
		return err
	}
	if dryRun && changes > 0 {
		return errDrift
	}
	return nil
}

// writePlan writes the plan as output says, text (printPlan) or json,
// and returns how many rules it changes.
func writePlan(w io.Writer, plan rules.ApplyPlan, output string) (int, error) {
	if output == "json" {
		return len(plan.Created) + len(plan.Updated) + len(plan.Deleted), json.NewEncoder(w).Encode(plan)
	}
	return printPlan(w, plan), nil
}

// rulesImportUsage is what "sluice rules import" prints about itself.
const rulesImportUsage = `Usage: sluice rules import -f FILE --format sentinel|envoy [flags]

Applies another limiter's rule file as Sluice rules, like rules apply
without --prune, and prints the plan: --format sentinel takes
sentinel-golang's JSON rule array (--kind says which rules) or a Kubernetes
resource of its CRDs (a .yaml or .yml file, kind FlowRules and the others),
--format envoy
an envoyproxy/ratelimit configuration (YAML), see docs/envoy-import.md.
Importing the same file twice changes nothing. A dry run changes nothing, so
a viewer token may ask for it.

Exit codes: 0 applied or nothing to do, 2 a dry run found changes to make,
1 an error (the server's message and each bad field are printed).

Flags:
`

func rulesImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sluice rules import", flag.ContinueOnError)
	var api apiFlags
	api.register(fs)
	file := fs.String("f", "", "the file to import; - reads standard input")
	format := fs.String("format", "", "the file's format: sentinel or envoy")
	kind := fs.String("kind", "", "with --format sentinel, the kind of the file's rules: flow (the default), circuitBreaker, hotspot or system")
	app := fs.String("app", "", "the app every imported rule names; empty, every engine runs them")
	dryRun := fs.Bool("dry-run", false, "only show the plan; exit 2 if it changes anything")
	output := fs.String("output", "text", "text: a readable diff; json: the plan as the server answers it, for bots")
	reason := fs.String("reason", "", "why, kept in each changed rule's history")
	if err := parseFlags(fs, args, rulesImportUsage, stdout, stderr); err != nil {
		return err
	}
	if *file == "" || *format == "" {
		return errors.New("sluice rules import: -f and --format are required")
	}
	if *output != "text" && *output != "json" {
		return errors.New("sluice rules import: --output must be text or json")
	}
	body, err := readFileArg(*file)
	if err != nil {
		return err
	}
	// The server judges the format, the kind and the app, naming each.
	query := url.Values{"format": {*format}, "dryRun": {strconv.FormatBool(*dryRun)}}
	for name, value := range map[string]string{"kind": *kind, "app": *app} {
		if value != "" {
			query.Set(name, value)
		}
	}
	header := http.Header{"Content-Type": {"application/json"}}
	// A .yaml file with --format sentinel is a Kubernetes resource of
	// sentinel-golang's CRDs, which the server takes as YAML.
	if ext := filepath.Ext(*file); *format == "envoy" || ext == ".yaml" || ext == ".yml" {
		header.Set("Content-Type", "application/yaml")
	}
	if *reason != "" {
		header.Set("X-Change-Reason", *reason)
	}
	return postPlan(ctx, &api, "/api/v1/rules/import?"+query.Encode(), header, body, *dryRun, *output, stdout)
}

// printPlan writes the plan as a readable diff and returns how many rules
// it changes.
func printPlan(w io.Writer, plan rules.ApplyPlan) int {
	for _, r := range plan.Created {
		fmt.Fprintf(w, "+ create %s %s (resource %s)\n", r.Kind, r.Name, r.Resource)
		printImpact(w, r.Impact)
	}
	for _, r := range plan.Updated {
		fmt.Fprintf(w, "~ update %s %s (resource %s)\n", r.Kind, r.Name, r.Resource)
		for _, c := range r.Changes {
			fmt.Fprintf(w, "    %s: %s -> %s\n", c.Field, c.From, c.To)
		}
		printImpact(w, r.Impact)
	}
	for _, r := range plan.Deleted {
		fmt.Fprintf(w, "- delete %s %s (resource %s)\n", r.Kind, r.Name, r.Resource)
	}
	for _, n := range plan.Notes {
		fmt.Fprintf(w, "! %s: %s\n", n.Field, n.Message)
	}
	changes := len(plan.Created) + len(plan.Updated) + len(plan.Deleted)
	summary := fmt.Sprintf("%d to create, %d to update, %d to delete, %d unchanged",
		len(plan.Created), len(plan.Updated), len(plan.Deleted), len(plan.Unchanged))
	switch {
	case plan.DryRun && changes > 0:
		fmt.Fprintf(w, "Plan: %s. Dry run: nothing was changed.\n", summary)
	case plan.DryRun || changes == 0:
		fmt.Fprintf(w, "Nothing to do: %s.\n", summary)
	default:
		fmt.Fprintf(w, "Applied: %s.\n", strings.ReplaceAll(summary, " to ", " "))
	}
	return changes
}

// printImpact writes what a dry run estimates a rule would have blocked,
// one line per range of history, if it has an estimate.
func printImpact(w io.Writer, est *impact.Estimate) {
	if est == nil {
		return
	}
	for _, r := range est.Ranges {
		if r.MinutesBlocked == 0 {
			fmt.Fprintf(w, "    impact over %s (estimate): would have blocked nothing of %d calls\n", r.Range, r.Calls)
			continue
		}
		busiest := r.Minutes[0]
		for _, m := range r.Minutes {
			if m.BlockedHigh > busiest.BlockedHigh {
				busiest = m
			}
		}
		fmt.Fprintf(w, "    impact over %s (estimate): would have blocked %d to %d of %d calls, in %d minutes; most at %s (%d calls, %d in its busiest second)\n",
			r.Range, r.BlockedLow, r.BlockedHigh, r.Calls, r.MinutesBlocked, busiest.Time.Format("2006-01-02 15:04 UTC"), busiest.Calls, busiest.BusiestSecond)
	}
	for _, n := range est.Notes {
		fmt.Fprintf(w, "    note: %s\n", n)
	}
}

// rulesExportUsage is what "sluice rules export" prints about itself.
const rulesExportUsage = `Usage: sluice rules export [flags]

Writes the server's rules as a file that rules apply takes: applying it
back changes nothing.

Flags:
`

func rulesExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sluice rules export", flag.ContinueOnError)
	var api apiFlags
	api.register(fs)
	format := fs.String("format", "yaml", "yaml or json")
	out := fs.String("o", "-", "file to write; - is standard output")
	if err := parseFlags(fs, args, rulesExportUsage, stdout, stderr); err != nil {
		return err
	}
	var body bytes.Buffer
	if err := api.call(ctx, http.MethodGet, "/api/v1/rules/export?format="+url.QueryEscape(*format), nil, nil, &body); err != nil {
		return err
	}
	if *out == "-" {
		_, err := stdout.Write(body.Bytes())
		return err
	}
	return os.WriteFile(*out, body.Bytes(), 0o644)
}

// call sends one request and decodes a 2xx answer into into (a
// *bytes.Buffer takes it raw); any other answer becomes an error carrying
// the server's message and field details.
func (a *apiFlags) call(ctx context.Context, method, path string, header http.Header, body []byte, into any) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(a.server, "/")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return apiError(resp.StatusCode, data)
	}
	if buf, ok := into.(*bytes.Buffer); ok {
		buf.Write(data)
		return nil
	}
	return json.Unmarshal(data, into)
}

// apiError words an error answer of the server, one line per bad field.
func apiError(status int, data []byte) error {
	var envelope server.ErrorResponse
	if err := json.Unmarshal(data, &envelope); err != nil || envelope.Error.Code == "" {
		return fmt.Errorf("the server answered %d: %s", status, bytes.TrimSpace(data))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the server answered %d %s: %s", status, envelope.Error.Code, envelope.Error.Message)
	for _, d := range envelope.Error.Details {
		fmt.Fprintf(&b, "\n  %s: %s", d.Field, d.Message)
	}
	return errors.New(b.String())
}
