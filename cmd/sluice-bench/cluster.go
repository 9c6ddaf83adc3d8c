package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/cluster"
)

// The cluster rules' figures (issue #16): how closely a global 1,000/s
// cluster rule holds when 4 engines on one Redis are driven at 3,000/s,
// what it does across a Redis kill, and what a decision on a cluster rule
// costs beside one on a local rule.

// The accuracy and outage figures' traffic: clusterRate calls a second in
// total, evenly paced, spread over clusterEngines engines that share one
// rule of clusterThreshold passes a second.
const (
	clusterThreshold = 1000
	clusterRate      = 3000
	clusterEngines   = 4
)

// Targets the figures are judged by (issue #16).
const (
	targetAccuracy = 0.05 // passes per second within 5% of the threshold
	targetFallback = 100 * time.Millisecond
	targetBack     = 2 * time.Second
	targetCostP99  = 50 * time.Microsecond
)

// clusterFigures runs the figures the flags ask for, on a Redis of its own
// unless -redis names one.
func clusterFigures(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	redisURL := fs.String("redis", "", "a running Redis (redis://host:port/db); default: start a throwaway redis-server on loopback, which the outage figure needs")
	accuracyFor := fs.Duration("accuracy", 15*time.Second, "how long the accuracy figure drives traffic (0 skips it)")
	up := fs.Duration("outage-up", 5*time.Second, "in the outage figure, traffic before Redis is killed and again after it is restarted (0 skips the figure)")
	down := fs.Duration("outage-down", 5*time.Second, "in the outage figure, how long Redis stays down")
	costFor := fs.Duration("cost", 10*time.Second, "how long the decision cost figure drives traffic (0 skips it)")
	costRate := fs.Int("cost-rate", 10_000, "calls a second per engine and per rule in the decision cost figure")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Printf("cluster figures: %d cores, load %s\n", runtime.NumCPU(), loadAverage())
	// The engines say when Redis is away, once per change; the client's
	// own lines, one per failed dial, would drown the figures.
	cluster.LogTo(slog.New(slog.DiscardHandler))
	url := *redisURL
	var srv *redisServer
	if url == "" {
		var err error
		if srv, err = startRedis(); err != nil {
			return err
		}
		defer srv.stop()
		url = srv.url()
	}
	var errs []error
	if *accuracyFor > 0 {
		errs = append(errs, clusterAccuracy(ctx, url, *accuracyFor))
	}
	switch {
	case *up <= 0:
	case srv == nil:
		fmt.Println("\n== outage: skipped, it kills Redis and so needs its own (run without -redis)")
	default:
		errs = append(errs, clusterOutage(ctx, srv, *up, *down))
	}
	if *costFor > 0 {
		errs = append(errs, clusterCost(ctx, url, *costRate, *costFor))
	}
	return errors.Join(errs...)
}

// clusterAccuracy drives the shared rule at clusterRate for d from a whole
// second on and prints the passes of each wall-clock second, their mean
// and worst after the first, and the most passes in any real second.
func clusterAccuracy(ctx context.Context, url string, d time.Duration) error {
	fmt.Printf("\n== accuracy: a cluster rule of %d/s driven at %d/s, evenly paced over %d engines on one Redis, %v\n",
		clusterThreshold, clusterRate, clusterEngines, d)
	es, err := startEngines(url, "accuracy", benchRules())
	if err != nil {
		return err
	}
	defer es.close()
	start := nextSecond()
	passes, late := es.drivePasses(ctx, "bench", start, d)
	counts := perSecond(passes, start, int(d/time.Second))
	fmt.Printf("  passes per second: %v\n", counts)
	printRate("  after the first second", counts[min(1, len(counts)):])
	printWindow(passes)
	printLateness(late)
	printFallbacks(es.stateChanges(), start)
	return ctx.Err()
}

// clusterOutage drives the shared rule as clusterAccuracy does, kills
// Redis (SIGKILL) after up, restarts it on the same port down later, and
// drives for up more. It prints the passes of each second through the
// outage and, per engine, how long the engine took to fall back after the
// kill and to be back on the shared count after the restart.
func clusterOutage(ctx context.Context, srv *redisServer, up, down time.Duration) error {
	fmt.Printf("\n== outage: the same traffic; Redis killed (SIGKILL) after %v, restarted on its port %v later, then %v more\n", up, down, up)
	es, err := startEngines(srv.url(), "outage", benchRules())
	if err != nil {
		return err
	}
	defer es.close()
	start := nextSecond()
	d := up + down + up
	type driven struct {
		passes [][]time.Time
		late   time.Duration
	}
	traffic := make(chan driven)
	go func() {
		passes, late := es.drivePasses(ctx, "bench", start, d)
		traffic <- driven{passes, late}
	}()

	time.Sleep(time.Until(start.Add(up)))
	killedAt := time.Now()
	srv.kill()
	time.Sleep(time.Until(start.Add(up + down)))
	restartedAt := time.Now()
	restartErr := srv.start()
	result := <-traffic
	passes := result.passes
	if restartErr != nil {
		return restartErr
	}

	counts := perSecond(passes, start, int(d/time.Second))
	fmt.Printf("  Redis killed at +%v, answering again at +%v (restarted at +%v)\n",
		killedAt.Sub(start).Round(time.Millisecond), srv.readyAt.Sub(start).Round(time.Millisecond),
		restartedAt.Sub(start).Round(time.Millisecond))
	fmt.Printf("  passes per second: %v\n", counts)
	printRate("  before the kill, after the first second", secondsBetween(counts, start, start.Add(time.Second), killedAt))
	printRate("  Redis down (whole seconds)", secondsBetween(counts, start, killedAt, restartedAt))
	printRate("  after the restart (whole seconds)", secondsBetween(counts, start, restartedAt, start.Add(d)))
	printWindow(passes)
	printLateness(result.late)
	changes := es.stateChanges()
	printFallbacks(changes, start)
	fallback := sinceFirst(changes, engine.ClusterFallingBack, killedAt)
	back := sinceFirst(changes, engine.ClusterShared, restartedAt)
	fmt.Printf("  kill → fallback, per engine: %v; worst %v (target ≤ %v)\n", fallback, slices.Max(fallback), targetFallback)
	fmt.Printf("  restart → back on the cluster count, per engine: %v; worst %v (target ≤ %v)\n", back, slices.Max(back), targetBack)
	if slices.Contains(fallback, -1) || slices.Contains(back, -1) {
		return errors.New("outage: an engine never fell back or never came back (-1 above)")
	}
	return ctx.Err()
}

// clusterCost drives every engine at rate calls a second on a cluster rule
// and, interleaved, on a local rule, both with room for every call, for d,
// and prints the latency of each Entry and Exit by rule.
func clusterCost(ctx context.Context, url string, rate int, d time.Duration) error {
	fmt.Printf("\n== decision cost: Entry+Exit timed around each call, %d calls/s per engine on each of a cluster and a local rule (interleaved), %d engines, %v\n",
		rate, clusterEngines, d)
	rules := []engine.FlowRule{
		{Name: "cost-cluster", Resource: "cost-cluster", Threshold: float64(2 * rate * clusterEngines), Scope: engine.ScopeCluster},
		{Name: "cost-local", Resource: "cost-local", Threshold: float64(2 * rate)},
	}
	es, err := startEngines(url, "cost", rules)
	if err != nil {
		return err
	}
	defer es.close()
	seconds := int((d + time.Second - 1) / time.Second)
	type sample struct {
		took    [2][]time.Duration // by rule
		blocked [2][]int           // by rule, by second
	}
	samples := make([]sample, clusterEngines)
	for i := range samples {
		for r := range rules {
			samples[i].took[r] = make([]time.Duration, 0, int(float64(rate)*d.Seconds())+rate)
			samples[i].blocked[r] = make([]int, seconds)
		}
	}
	resources := make([][2]*engine.Resource, clusterEngines)
	for i, eng := range es.engines {
		resources[i] = [2]*engine.Resource{eng.Resource(rules[0].Resource), eng.Resource(rules[1].Resource)}
	}
	start := nextSecond()
	late := paceEngines(ctx, float64(rate*clusterEngines), start, d, func(i int) {
		s := &samples[i]
		for r, res := range resources[i] {
			began := time.Now()
			e, blocked := res.Entry()
			if blocked == nil {
				e.Exit()
			}
			s.took[r] = append(s.took[r], time.Since(began))
			if blocked != nil {
				s.blocked[r][min(int(began.Sub(start)/time.Second), seconds-1)]++
			}
		}
	})
	for r, rule := range rules {
		fmt.Printf("  %s rule (%s):\n", rule.Name, cmp.Or(rule.Scope, engine.ScopeLocal))
		var all []time.Duration
		blocked := make([]int, seconds)
		for i, s := range samples {
			fmt.Printf("    engine e%d  %s\n", i+1, latencies(s.took[r]))
			all = append(all, s.took[r]...)
			for sec, n := range s.blocked[r] {
				blocked[sec] += n
			}
		}
		fmt.Printf("    all         %s\n", latencies(all))
		fmt.Printf("    blocked per second (the threshold has room for twice the calls): %v\n", blocked)
		if rule.Scope == engine.ScopeCluster {
			fmt.Printf("    target: p99 ≤ %v per engine\n", targetCostP99)
		}
	}
	printLateness(late)
	printFallbacks(es.stateChanges(), start)
	return ctx.Err()
}

// benchRules is the shared rule of the accuracy and outage figures, its
// fallback the default: local, the threshold divided by the engines.
func benchRules() []engine.FlowRule {
	return []engine.FlowRule{{Name: "bench", Resource: "bench", Threshold: clusterThreshold, Scope: engine.ScopeCluster}}
}

// benchEngines are clusterEngines engines in this process, e1 … e4, each
// with its own client of one Redis.
type benchEngines struct {
	engines []*engine.Engine
	clients []*cluster.Redis

	mu      sync.Mutex
	changes [][]stateChange // by engine
}

// startEngines starts the engines with rules loaded, their keys under a
// prefix of their own so that no figure counts another's passes, and
// keeps their cluster state changes.
func startEngines(url, figure string, rules []engine.FlowRule) (*benchEngines, error) {
	prefix := fmt.Sprintf("sluice-bench:%d:%s:", time.Now().UnixNano(), figure)
	es := &benchEngines{changes: make([][]stateChange, clusterEngines)}
	for i := range clusterEngines {
		client, err := cluster.New(cluster.Options{URL: url, KeyPrefix: prefix})
		if err != nil {
			es.close()
			return nil, err
		}
		eng := engine.New(engine.Options{
			Cluster: client, ClusterEngine: fmt.Sprintf("e%d", i+1),
			OnClusterStateChange: func(c engine.ClusterStateChange) {
				at := time.Now()
				es.mu.Lock()
				defer es.mu.Unlock()
				es.changes[i] = append(es.changes[i], stateChange{state: c.State, at: at, err: c.Err})
			},
		})
		es.engines, es.clients = append(es.engines, eng), append(es.clients, client)
		if err := eng.LoadFlowRules(rules); err != nil {
			es.close()
			return nil, err
		}
	}
	return es, nil
}

// stateChanges is a copy of the engines' cluster state changes so far.
func (es *benchEngines) stateChanges() [][]stateChange {
	es.mu.Lock()
	defer es.mu.Unlock()
	changes := make([][]stateChange, len(es.changes))
	for i, cs := range es.changes {
		changes[i] = slices.Clone(cs)
	}
	return changes
}

// close closes the engines, which return their leases, then the clients.
func (es *benchEngines) close() {
	for _, eng := range es.engines {
		eng.Close()
	}
	for _, c := range es.clients {
		_ = c.Close()
	}
}

// drivePasses calls Entry on resource, clusterRate times a second in
// total over the engines, from start for d, and returns when each pass was
// decided, by engine, and how late the latest call was made.
func (es *benchEngines) drivePasses(ctx context.Context, resource string, start time.Time, d time.Duration) ([][]time.Time, time.Duration) {
	passes := make([][]time.Time, len(es.engines))
	resources := make([]*engine.Resource, len(es.engines))
	for i, eng := range es.engines {
		resources[i] = eng.Resource(resource)
	}
	late := paceEngines(ctx, clusterRate, start, d, func(i int) {
		if e, blocked := resources[i].Entry(); blocked == nil {
			passes[i] = append(passes[i], time.Now())
			e.Exit()
		}
	})
	return passes, late
}

// paceEngines makes calls at rate calls a second in total from start
// until d has passed: call j is due at start + j/rate and goes to engine
// j mod clusterEngines, each engine's calls on a goroutine of its own that
// makes those due every millisecond. It returns how late the latest call
// was made: a loaded machine delays the pacing itself.
func paceEngines(ctx context.Context, rate float64, start time.Time, d time.Duration, call func(engine int)) time.Duration {
	var wg sync.WaitGroup
	late := make([]time.Duration, clusterEngines)
	for i := range clusterEngines {
		wg.Go(func() {
			time.Sleep(time.Until(start))
			for k := 0; ctx.Err() == nil; {
				elapsed := time.Since(start)
				for ; ; k++ {
					due := time.Duration(float64(k*clusterEngines+i) * float64(time.Second) / rate)
					if due >= d {
						return
					}
					if due > elapsed {
						break
					}
					late[i] = max(late[i], elapsed-due)
					call(i)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	return slices.Max(late)
}

// printLateness prints how late the latest call of a figure was made.
func printLateness(late time.Duration) {
	fmt.Printf("  pacing: the latest call was made %v after it was due\n", late.Round(100*time.Microsecond))
}

// nextSecond is the next whole wall-clock second, with a moment to spare.
func nextSecond() time.Time {
	return time.Now().Add(100 * time.Millisecond).Truncate(time.Second).Add(time.Second)
}

// perSecond counts passes by the wall-clock second they were decided in,
// the first seconds seconds from start.
func perSecond(passes [][]time.Time, start time.Time, seconds int) []int {
	counts := make([]int, seconds)
	for _, ps := range passes {
		for _, at := range ps {
			if s := int(at.Sub(start) / time.Second); s >= 0 && s < seconds {
				counts[s]++
			}
		}
	}
	return counts
}

// secondsBetween is the counts of the whole seconds from start that lie
// between from and to.
func secondsBetween(counts []int, start, from, to time.Time) []int {
	first := int((from.Sub(start) + time.Second - 1) / time.Second)
	last := int(to.Sub(start) / time.Second) // exclusive
	if first >= last || first >= len(counts) {
		return nil
	}
	return counts[first:min(last, len(counts))]
}

// printRate prints the mean, most and least of counts against the
// threshold.
func printRate(label string, counts []int) {
	if len(counts) == 0 {
		fmt.Printf("%s: no whole second\n", label)
		return
	}
	sum := 0
	for _, n := range counts {
		sum += n
	}
	mean := float64(sum) / float64(len(counts))
	most, least := slices.Max(counts), slices.Min(counts)
	worst := max(float64(most-clusterThreshold), float64(clusterThreshold-least)) / clusterThreshold
	verdict := "within"
	if worst > targetAccuracy {
		verdict = "NOT within"
	}
	fmt.Printf("%s (%d s): mean %.1f/s, most %d, least %d; worst %.1f%% off %d, %s %.0f%%\n",
		label, len(counts), mean, most, least, 100*worst, clusterThreshold, verdict, 100*targetAccuracy)
}

// printWindow prints the most passes in any real window of 1 s.
func printWindow(passes [][]time.Time) {
	all := slices.Concat(passes...)
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	most, at := 0, time.Time{}
	for i, j := 0, 0; i < len(all); i++ {
		for j < len(all) && all[j].Sub(all[i]) < time.Second {
			j++
		}
		if j-i > most {
			most, at = j-i, all[i]
		}
	}
	fmt.Printf("  most passes in any real 1-second window: %d (from %s), %+.1f%% of %d\n",
		most, at.Format("15:04:05.000"), 100*float64(most-clusterThreshold)/clusterThreshold, clusterThreshold)
}

// stateChange is an engine's cluster state change, when it was told.
type stateChange struct {
	state engine.ClusterState
	at    time.Time
	err   error
}

// printFallbacks prints each spell of an engine on its fallback, from
// start on: a figure's traffic decided without the shared count while
// Redis was up, an exchange slower than its timeout (50 ms) or failing.
func printFallbacks(changes [][]stateChange, start time.Time) {
	var spells []string
	for i, cs := range changes {
		for j, c := range cs {
			if c.state != engine.ClusterFallingBack {
				continue
			}
			spell := fmt.Sprintf("e%d at +%v", i+1, c.at.Sub(start).Round(time.Millisecond))
			if j+1 < len(cs) {
				spell += fmt.Sprintf(" for %v", cs[j+1].at.Sub(c.at).Round(time.Millisecond))
			}
			spells = append(spells, spell+fmt.Sprintf(" (%v)", c.err))
		}
	}
	if len(spells) == 0 {
		fmt.Println("  no engine fell back")
		return
	}
	fmt.Printf("  engines fell back %d times: %s\n", len(spells), strings.Join(spells, "; "))
}

// sinceFirst is, per engine, the time from since to the engine's first
// change to state after it: 0 if the engine was in state already, -1 if
// no change came.
func sinceFirst(changes [][]stateChange, state engine.ClusterState, since time.Time) []time.Duration {
	took := make([]time.Duration, len(changes))
	for i, cs := range changes {
		took[i] = -1
		already := false // the state in force at since is state
		for _, c := range cs {
			if c.at.Before(since) {
				already = c.state == state
				continue
			}
			if c.state == state {
				took[i] = c.at.Sub(since).Round(100 * time.Microsecond)
				break
			}
		}
		if already {
			took[i] = 0
		}
	}
	return took
}

// latencies is "p50 … p99 … p999 … max …" of ds, sorting them.
func latencies(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no calls"
	}
	slices.Sort(ds)
	return fmt.Sprintf("p50 %-8v p99 %-8v p999 %-8v max %-10v (n=%d)", percentile(ds, 50), percentile(ds, 99),
		percentile(ds, 99.9), ds[len(ds)-1].Round(time.Microsecond), len(ds))
}

// redisServer is a throwaway redis-server on a free loopback port, with a
// temporary directory and no persistence, as server/cluster/redistest
// runs them for the tests.
type redisServer struct {
	bin, dir string
	port     int
	cmd      *exec.Cmd
	exited   chan struct{}
	// readyAt is when the server last answered PING after a start.
	readyAt time.Time
}

// startRedis starts a redis-server and waits until it answers.
func startRedis() (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server is not installed: run make redis, or give -redis")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-bench-redis-")
	if err != nil {
		return nil, err
	}
	s := &redisServer{bin: bin, dir: dir, port: port}
	if err := s.start(); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *redisServer) url() string {
	return "redis://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) + "/0"
}

// start starts the server on its port, empty, and waits until it answers
// PING.
func (s *redisServer) start() error {
	logFile, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "")
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.dir, logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	client, err := cluster.New(cluster.Options{URL: s.url(), Timeout: time.Second})
	if err != nil {
		return err
	}
	defer client.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := client.Ping(context.Background())
		if err == nil {
			s.readyAt = time.Now()
			return nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server exited: %w\n%s", err, strings.TrimSpace(string(log)))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server did not answer in 10 s: %w", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kill kills the server with SIGKILL, as a crash would, and waits until
// it is gone.
func (s *redisServer) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// stop kills the server and removes its directory.
func (s *redisServer) stop() {
	s.kill()
	_ = os.RemoveAll(s.dir)
}
