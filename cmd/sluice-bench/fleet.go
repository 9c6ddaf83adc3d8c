package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/remote"
)

// The fleet's figures (issue #15): how fast a rule change reaches every
// instance, what 500 reporting instances cost the server, and what an
// instance pays for its sync and reports.

// api is a client of a running server's API with an admin token.
type api struct {
	base, token string
	client      *http.Client
}

func newAPI(server, token string) (*api, error) {
	if token == "" {
		return nil, errors.New("an admin API token is needed: -token or $SLUICE_TOKEN")
	}
	return &api{base: strings.TrimSuffix(server, "/") + "/api/v1", token: token, client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// do sends body (JSON, or none) and decodes a 2xx answer into out.
func (a *api) do(method, path string, body, out any) error {
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reader = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, a.base+path, reader)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// instanceToken creates an API token of role instance.
func (a *api) instanceToken(name string) (string, error) {
	var created struct{ Token string }
	err := a.do(http.MethodPost, "/tokens", map[string]any{"name": name, "role": "instance"}, &created)
	return created.Token, err
}

// revision is the rule snapshot's revision for app.
func (a *api) revision(app string) (int64, error) {
	var snap struct{ Revision int64 }
	err := a.do(http.MethodGet, "/rules/snapshot?app="+app, nil, &snap)
	return snap.Revision, err
}

// percentile returns the p-th percentile (0–100) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// summary is "p50 … p99 … max …" of ds.
func summary(ds []time.Duration) string {
	slices.Sort(ds)
	return fmt.Sprintf("p50 %v  p99 %v  max %v  (n=%d)", percentile(ds, 50).Round(time.Microsecond*100),
		percentile(ds, 99).Round(time.Microsecond*100), ds[len(ds)-1].Round(time.Microsecond*100), len(ds))
}

// processCPU returns the CPU time a process has used, from /proc.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond, nil
}

var servingAddr = regexp.MustCompile(`msg=serving addr=(\S+)`)

// example is a sluice-example process.
type example struct {
	cmd  *exec.Cmd
	base string
}

// startExamples runs n sluice-example processes of app against server,
// each with its own cache directory under dir, and waits until each has
// the server's rules in force.
func startExamples(ctx context.Context, binary, server, token, app, dir string, n int) ([]*example, error) {
	var started []*example
	for i := range n {
		cmd := exec.CommandContext(ctx, binary, "-addr", "127.0.0.1:0", "-server", server, "-token", token,
			"-app", app, "-cache-dir", filepath.Join(dir, strconv.Itoa(i)), "-instance-id", fmt.Sprintf("%s-%d", app, i))
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return started, err
		}
		if err := cmd.Start(); err != nil {
			return started, err
		}
		ex := &example{cmd: cmd}
		started = append(started, ex)
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			if m := servingAddr.FindStringSubmatch(lines.Text()); m != nil {
				ex.base = "http://" + m[1]
				break
			}
		}
		if ex.base == "" {
			return started, fmt.Errorf("instance %d exited before serving", i)
		}
		go func() { _, _ = io.Copy(io.Discard, stderr) }()
	}
	for _, ex := range started {
		deadline := time.Now().Add(10 * time.Second)
		for {
			if st, err := ex.state(); err == nil && st.HasRules {
				break
			}
			if time.Now().After(deadline) {
				return started, fmt.Errorf("%s has no rules after 10 s", ex.base)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return started, nil
}

// exampleState is what GET /sluice/state says.
type exampleState struct {
	Revision int64
	HasRules bool
}

func (ex *example) state() (exampleState, error) {
	var st exampleState
	resp, err := http.Get(ex.base + "/sluice/state")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func stopExamples(examples []*example) {
	for _, ex := range examples {
		_ = ex.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, ex := range examples {
		_ = ex.cmd.Wait()
	}
}

// propagation measures how long a rule change takes to be in force in
// every one of n instance processes: a rule's threshold is changed, and
// each instance's /sluice/state is polled until its revision reaches the
// server's.
func propagation(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("propagation", flag.ContinueOnError)
	server := fs.String("server", "http://127.0.0.1:8080", "the Sluice server")
	token := fs.String("token", os.Getenv("SLUICE_TOKEN"), "an admin API token (default $SLUICE_TOKEN)")
	binary := fs.String("example", "./sluice-example", "the sluice-example binary")
	n := fs.Int("instances", 20, "instance processes")
	changes := fs.Int("changes", 30, "rule changes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a, err := newAPI(*server, *token)
	if err != nil {
		return err
	}
	app := fmt.Sprintf("bench-propagation-%d", time.Now().Unix())
	instanceToken, err := a.instanceToken(app)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "sluice-propagation-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	examples, err := startExamples(ctx, *binary, *server, instanceToken, app, dir, *n)
	defer stopExamples(examples)
	if err != nil {
		return err
	}
	var rule struct{ ID int64 }
	if err := a.do(http.MethodPost, "/rules", map[string]any{
		"name": app, "kind": "flow", "resource": "POST /checkout", "threshold": 1000,
	}, &rule); err != nil {
		return err
	}
	var each, all []time.Duration
	for c := 1; c <= *changes; c++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		start := time.Now()
		if err := a.do(http.MethodPatch, fmt.Sprintf("/rules/%d", rule.ID), map[string]any{"threshold": 1000 + c}, nil); err != nil {
			return err
		}
		want, err := a.revision(app)
		if err != nil {
			return err
		}
		took := make([]time.Duration, len(examples))
		var wg sync.WaitGroup
		for i, ex := range examples {
			wg.Go(func() {
				for time.Since(start) < 10*time.Second {
					if st, err := ex.state(); err == nil && st.Revision >= want {
						took[i] = time.Since(start)
						return
					}
					time.Sleep(time.Millisecond)
				}
				took[i] = 10 * time.Second
			})
		}
		wg.Wait()
		each = append(each, took...)
		all = append(all, slices.Max(took))
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("rule change → in force, %d instance processes, %d changes, load %s\n", len(examples), *changes, loadAverage())
	fmt.Printf("  each instance:  %s\n", summary(each))
	fmt.Printf("  all instances:  %s\n", summary(all))
	return a.do(http.MethodDelete, fmt.Sprintf("/rules/%d", rule.ID), nil, nil)
}

// reporters simulates n instances, each posting a report every second with
// live figures of its resources, and once a minute is over by the
// instance's own delay (drawn in [0, -minute-spread), as engine/remote's
// Config.MinuteSpread) the minute rows of each; it prints the reports'
// latency and, with -server-pid, the server's CPU over the run.
func reporters(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("reporters", flag.ContinueOnError)
	server := fs.String("server", "http://127.0.0.1:8080", "the Sluice server")
	token := fs.String("token", os.Getenv("SLUICE_TOKEN"), "an admin API token (default $SLUICE_TOKEN)")
	n := fs.Int("instances", 500, "simulated instances")
	resources := fs.Int("resources", 10, "resources per instance")
	duration := fs.Duration("duration", 65*time.Second, "how long to report (past a minute's end, so that minutes are posted)")
	pid := fs.Int("server-pid", 0, "the server's process id, to measure its CPU")
	spread := fs.Duration("minute-spread", remote.DefaultMinuteSpread, "each instance posts a finished minute after a delay drawn in [0, spread), as engine/remote does; 0 posts every minute as it ends")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a, err := newAPI(*server, *token)
	if err != nil {
		return err
	}
	app := fmt.Sprintf("bench-reporters-%d", time.Now().Unix())
	instanceToken, err := a.instanceToken(app)
	if err != nil {
		return err
	}
	var cpuBefore time.Duration
	if *pid > 0 {
		if cpuBefore, err = processCPU(*pid); err != nil {
			return err
		}
	}
	ownBefore, err := processCPU(os.Getpid())
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *n}}
	start := time.Now()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		// withMinutes are the latencies of the reports that carried
		// minute rows, which the server writes to the database.
		withMinutes []time.Duration
		failures    int
		wg          sync.WaitGroup
	)
	for i := range *n {
		wg.Go(func() {
			// Spread the instances over the second, as their tickers are.
			time.Sleep(time.Duration(i) * time.Second / time.Duration(*n))
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			minute := time.Now().UTC().Truncate(time.Minute)
			var delay time.Duration
			if *spread > 0 {
				delay = rand.N(*spread)
			}
			for time.Since(start) < *duration && ctx.Err() == nil {
				body, minutes := simulatedReport(app, i, *resources, delay, &minute)
				sent := time.Now()
				status, _, err := post(client, *server+"/api/v1/instances/report", instanceToken, body)
				took := time.Since(sent)
				mu.Lock()
				if err != nil || status != http.StatusNoContent {
					failures++
				} else {
					latencies = append(latencies, took)
					if minutes {
						withMinutes = append(withMinutes, took)
					}
				}
				mu.Unlock()
				<-tick.C
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	fmt.Printf("%d simulated instances reporting every second, %d resources each, %v, load %s\n", *n, *resources, elapsed.Round(time.Second), loadAverage())
	if len(latencies) > 0 {
		fmt.Printf("  report latency: %s, failures %d\n", summary(latencies), failures)
	}
	if len(withMinutes) > 0 {
		fmt.Printf("  reports with minute rows: %s\n", summary(withMinutes))
	}
	// The simulator shares the machine with the server unless pinned
	// apart (taskset): its CPU says how much of the machine it took.
	if ownAfter, err := processCPU(os.Getpid()); err == nil {
		fmt.Printf("  simulator CPU: %.1f%% of a core\n", 100*float64(ownAfter-ownBefore)/float64(elapsed))
	}
	if *pid > 0 {
		cpuAfter, err := processCPU(*pid)
		if err != nil {
			return err
		}
		fmt.Printf("  server CPU: %.1f%% of a core\n", 100*float64(cpuAfter-cpuBefore)/float64(elapsed))
	}
	if failures > 0 {
		return fmt.Errorf("%d reports failed", failures)
	}
	return nil
}

// simulatedReport is instance i's report now: live figures of its
// resources, and their minute rows once the minute *minute is over by
// delay; it says whether it holds minute rows.
func simulatedReport(app string, i, resources int, delay time.Duration, minute *time.Time) (string, bool) {
	var minutes, live []string
	now := time.Now().UTC().Add(-delay).Truncate(time.Minute)
	for r := range resources {
		name := fmt.Sprintf("GET /bench/%d", r)
		live = append(live, fmt.Sprintf(`{"resource":%q,"passQps":50,"blockQps":2,"completeQps":50,"avgRtMs":3,"concurrency":1}`, name))
		if now.After(*minute) {
			minutes = append(minutes, fmt.Sprintf(`{"resource":%q,"time":%q,"pass":3000,"block":120,"shadowBlock":0,"complete":3000,"error":3,"rtSumMs":9000,"minRtMs":1,"maxRtMs":40,"maxConcurrency":4}`,
				name, minute.Format(time.RFC3339)))
		}
	}
	*minute = now
	return fmt.Sprintf(`{"instance":{"id":"%s-%d","app":%q,"hostname":"bench","pid":%d,"version":"bench","rulesRevision":1},"minutes":[%s],"live":[%s]}`,
		app, i, app, 10000+i, strings.Join(minutes, ","), strings.Join(live, ",")), len(minutes) > 0
}

// instanceOverhead drives an engine at a steady rate twice, on its own and
// as an engine/remote client of the server, and prints the process's CPU
// in each: the difference is what the client's sync and reports cost.
func instanceOverhead(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("instance-overhead", flag.ContinueOnError)
	server := fs.String("server", "http://127.0.0.1:8080", "the Sluice server")
	token := fs.String("token", os.Getenv("SLUICE_TOKEN"), "an admin API token (default $SLUICE_TOKEN)")
	rate := fs.Int("rate", 10_000, "calls a second")
	duration := fs.Duration("duration", 30*time.Second, "how long each run drives the engine")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a, err := newAPI(*server, *token)
	if err != nil {
		return err
	}
	app := fmt.Sprintf("bench-overhead-%d", time.Now().Unix())
	instanceToken, err := a.instanceToken(app)
	if err != nil {
		return err
	}
	if err := a.do(http.MethodPost, "/rules", map[string]any{
		"name": app, "kind": "flow", "resource": "GET /bench/0", "threshold": *rate,
	}, nil); err != nil {
		return err
	}
	plain := func() (*engine.Engine, func() error, error) {
		e := engine.New(engine.Options{})
		return e, func() error { e.Close(); return nil }, nil
	}
	withClient := func() (*engine.Engine, func() error, error) {
		c, err := remote.New(remote.Config{ServerURL: *server, Token: instanceToken, App: app, InstanceID: app})
		if err != nil {
			return nil, nil, err
		}
		if err := c.Start(ctx); err != nil {
			return nil, nil, err
		}
		select {
		case <-c.Ready():
		case <-time.After(10 * time.Second):
			return nil, nil, errors.Join(errors.New("no rules from the server after 10 s"), c.Close())
		}
		return c.Engine(), c.Close, nil
	}
	fmt.Printf("%d calls a second on 20 resources for %v per run, load %s\n", *rate, *duration, loadAverage())
	var used [2]time.Duration
	for i, run := range []struct {
		name  string
		start func() (*engine.Engine, func() error, error)
	}{{"engine alone", plain}, {"engine/remote client", withClient}} {
		eng, stop, err := run.start()
		if err != nil {
			return err
		}
		used[i] = drive(ctx, eng, *rate, *duration)
		if err := stop(); err != nil {
			return err
		}
		fmt.Printf("  %-22s CPU %.2f%% of a core\n", run.name, 100*float64(used[i])/float64(*duration))
	}
	if extra := used[1] - used[0]; extra > 0 {
		fmt.Printf("  sync and reports: %.2f%% of a core\n", 100*float64(extra)/float64(*duration))
	} else {
		fmt.Println("  sync and reports: less than the runs differ by on their own (the client's run used no more CPU)")
	}
	return nil
}

// drive calls Entry and Exit on eng rate times a second, in bursts every
// millisecond, for d, and returns the CPU the process used meanwhile.
func drive(ctx context.Context, eng *engine.Engine, rate int, d time.Duration) time.Duration {
	resources := make([]*engine.Resource, 20)
	for i := range resources {
		resources[i] = eng.Resource(fmt.Sprintf("GET /bench/%d", i))
	}
	before, _ := processCPU(os.Getpid())
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	done := 0
	for time.Since(start) < d && ctx.Err() == nil {
		<-tick.C
		due := int(time.Since(start) * time.Duration(rate) / time.Second)
		for ; done < due; done++ {
			if e, blk := resources[done%len(resources)].Entry(); blk == nil {
				e.Exit()
			}
		}
	}
	after, _ := processCPU(os.Getpid())
	return after - before
}

// loadAverage is the machine's load averages, as /proc/loadavg says them.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
