package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: sluice-bench hello|accuracy|cardinality|propagation|reporters|instance-overhead|cluster|replicas|rls|rls-accuracy|adaptive [flags]")
	}
	switch args[0] {
	case "hello":
		return hello(ctx, args[1:])
	case "accuracy":
		return accuracy(ctx, args[1:])
	case "cardinality":
		return cardinality(ctx, args[1:])
	case "propagation":
		return propagation(ctx, args[1:])
	case "reporters":
		return reporters(ctx, args[1:])
	case "instance-overhead":
		return instanceOverhead(ctx, args[1:])
	case "cluster":
		return clusterFigures(ctx, args[1:])
	case "replicas":
		return replicas(ctx, args[1:])
	case "rls":
		return rlsFigures(ctx, args[1:])
	case "rls-accuracy":
		return rlsAccuracy(ctx, args[1:])
	case "adaptive":
		return adaptiveOverload(ctx, args[1:])
	}
	return fmt.Errorf("unknown command %q; commands: hello, accuracy, cardinality, propagation, reporters, instance-overhead, cluster, replicas, rls, rls-accuracy, adaptive", args[0])
}

// helloBody is the fixed answer, 60 bytes.
var helloBody = []byte(`{"allowed":true,"waitMs":0,"note":"hello from sluice-bench"}`)

func hello(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("hello", flag.ContinueOnError)
	addr := fs.String("addr", ":8081", "address to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Post("/", func(c *fiber.Ctx) error {
		c.Response().Header.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
		return c.Send(helloBody)
	})
	go func() {
		<-ctx.Done()
		_ = app.Shutdown()
	}()
	fmt.Printf("hello: answering POST / with %d bytes on %s\n", len(helloBody), *addr)
	return app.Listen(*addr)
}

func accuracy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("accuracy", flag.ContinueOnError)
	server := fs.String("server", "http://127.0.0.1:8080", "the Sluice server")
	threshold := fs.Int("threshold", 100, "the rule's passes per second")
	duration := fs.Duration("duration", 10*time.Second, "how long to send")
	workers := fs.Int("workers", 16, "concurrent clients hammering (without -rate)")
	rate := fs.Float64("rate", 0, "send this many checks a second, evenly paced, instead of hammering")
	warmUp := fs.Bool("warmup", false, "a warm-up rule (warmUpPeriodSec 10, warmUpColdFactor 3), compared second by second with the curve the engine follows under a hammer")
	token := fs.String("token", os.Getenv("SLUICE_TOKEN"), "an editor or admin API token (default $SLUICE_TOKEN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	resource := fmt.Sprintf("accuracy-%d", time.Now().UnixNano())
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: max(*workers, 64)},
	}
	rule := fmt.Sprintf(`{"kind": "flow", "resource": %q, "threshold": %d}`, resource, *threshold)
	if *warmUp {
		rule = fmt.Sprintf(`{"kind": "flow", "resource": %q, "threshold": %d, "tokenCalculateStrategy": "warmUp", "warmUpPeriodSec": %d, "warmUpColdFactor": %d}`,
			resource, *threshold, warmUpPeriodSec, warmUpColdFactor)
	}
	if status, body, err := post(client, *server+"/api/v1/rules", *token, rule); err != nil || status != http.StatusCreated {
		return fmt.Errorf("creating the rule: %d %s %v", status, body, err)
	}

	s := &sender{client: client, url: *server + "/api/v1/check", token: *token, check: fmt.Sprintf(`{"resource": %q}`, resource)}
	if *rate > 0 {
		s.paced(ctx, *rate, *duration)
	} else {
		s.hammer(ctx, *workers, *duration)
	}

	slices.Sort(s.passes)
	maxWindow, maxAt := 0, time.Duration(0)
	for i, j := 0, 0; i < len(s.passes); i++ {
		for j < len(s.passes) && s.passes[j]-s.passes[i] < time.Second {
			j++
		}
		if j-i > maxWindow {
			maxWindow, maxAt = j-i, s.passes[i]
		}
	}
	shape := fmt.Sprintf("%d workers hammering", *workers)
	if *rate > 0 {
		shape = fmt.Sprintf("%.0f/s evenly paced", *rate)
	}
	fmt.Printf("resource %s, threshold %d/s, %s, %v\n", resource, *threshold, shape, s.elapsed.Round(time.Millisecond))
	fmt.Printf("requests %d (%.0f/s), errors %d, passes %d (%.1f/s)\n",
		s.requests, float64(s.requests)/s.elapsed.Seconds(), s.errs, len(s.passes), float64(len(s.passes))/s.elapsed.Seconds())
	fmt.Printf("most passes in any 1-second window: %d (from %v)\n", maxWindow, maxAt.Round(time.Microsecond))
	fmt.Printf("passes per second (by when a check was sent): %v\n", s.perSecond)
	if len(s.perSecond) > 2 {
		rest := s.perSecond[2:]
		sum := 0
		for _, n := range rest {
			sum += n
		}
		fmt.Printf("after the first two seconds: mean %.1f/s, least %d\n", float64(sum)/float64(len(rest)), slices.Min(rest))
	}
	if *warmUp {
		printWarmUpCurve(s.perSecond, *threshold)
	}
	if maxWindow > *threshold*110/100 {
		return fmt.Errorf("a 1-second window held %d passes, over %d", maxWindow, *threshold*110/100)
	}
	return nil
}

// The warm-up rule's shape in accuracy -warmup.
const (
	warmUpPeriodSec  = 10
	warmUpColdFactor = 3
)

// sender sends checks and keeps what came of them.
type sender struct {
	client            *http.Client
	url, token, check string

	mu        sync.Mutex
	passes    []time.Duration // since the start, when the answer arrived
	perSecond []int           // passes by the second the check was sent in
	requests  int
	errs      int
	elapsed   time.Duration
}

// send sends one check, sent in second sec of the run, and counts it.
func (s *sender) send(start time.Time, sec int) {
	status, body, err := post(s.client, s.url, s.token, s.check)
	at := time.Since(start)
	var r struct {
		Allowed bool `json:"allowed"`
	}
	ok := err == nil && status == http.StatusOK && json.Unmarshal(body, &r) == nil
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	switch {
	case !ok:
		s.errs++
	case r.Allowed:
		s.passes = append(s.passes, at)
		for len(s.perSecond) <= sec {
			s.perSecond = append(s.perSecond, 0)
		}
		s.perSecond[sec]++
	}
}

// hammer sends from workers clients, each as fast as it is answered.
func (s *sender) hammer(ctx context.Context, workers int, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				s.send(start, int(time.Since(start)/time.Second))
			}
		})
	}
	wg.Wait()
	s.elapsed = time.Since(start)
}

// paced sends rate checks a second on schedule, each on its own goroutine
// so that a slow answer delays no other check. It starts on a wall-clock
// second, as the engine's windows do.
func (s *sender) paced(ctx context.Context, rate float64, d time.Duration) {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	start := time.Now()
	var wg sync.WaitGroup
	for j := 0; ctx.Err() == nil; j++ {
		due := time.Duration(float64(j) * float64(time.Second) / rate)
		if due >= d {
			break
		}
		time.Sleep(time.Until(start.Add(due)))
		wg.Go(func() { s.send(start, int(due/time.Second)) })
	}
	wg.Wait()
	s.elapsed = time.Since(start)
}

// printWarmUpCurve sets passes per second beside the curve the engine's
// warm-up follows under a hammer on a manual clock (the curve of Guava's
// SmoothWarmingUp and Sentinel that the engine's tests check), and the
// largest gap between the two after the first second.
func printWarmUpCurve(got []int, threshold int) {
	want := warmUpCurve(threshold, len(got))
	fmt.Printf("warm-up curve (hammered, manual clock):  %v\n", want)
	worst := 0.0
	for i := 1; i < len(got) && i < len(want); i++ {
		worst = max(worst, math.Abs(float64(got[i]-want[i]))/float64(want[i]))
	}
	fmt.Printf("largest gap to the curve after the first second: %.1f%%\n", worst*100)
}

// warmUpCurve is the passes per second of a cold warm-up rule hammered for
// seconds seconds, on a manual clock: every millisecond, calls until one
// is blocked.
func warmUpCurve(threshold, seconds int) []int {
	clock := engine.NewManualClock(0)
	eng := engine.New(engine.Options{Clock: clock})
	defer eng.Close()
	if err := eng.LoadFlowRules([]engine.FlowRule{{
		Resource: "curve", Threshold: float64(threshold),
		TokenCalculateStrategy: engine.StrategyWarmUp, WarmUpPeriodSec: warmUpPeriodSec, WarmUpColdFactor: warmUpColdFactor,
	}}); err != nil {
		panic(err) // a rule this command built itself
	}
	res := eng.Resource("curve")
	curve := make([]int, seconds)
	for ms := range int64(seconds) * 1000 {
		clock.Set(ms)
		for {
			e, blocked := res.Entry()
			if blocked != nil {
				break
			}
			e.Exit()
			curve[ms/1000]++
		}
	}
	return curve
}

// post sends body as JSON with the bearer token and reads the answer.
func post(client *http.Client, url, token, body string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}
