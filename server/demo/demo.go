package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"log/slog"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/rules"
)

// Everything the demo makes is marked: rule names start
// with demo-, resource names with demo:, and descriptions say so.

// The marks of the demo's rules, which the console looks for.
const (
	// NamePrefix starts the name of every demo rule.
	NamePrefix = "demo-"
	// DescriptionPrefix starts the description of every demo rule.
	DescriptionPrefix = "Demo data (sluice --demo): "
)

// demoRules are the seeded rules, in the shape the apply API takes.
var demoRules = []string{
	`{"name": "demo-orders-qps", "kind": "flow", "resource": "demo:GET /orders", "threshold": 50,
		"description": "` + DescriptionPrefix + `at most 50 order reads a second; the traffic peaks above it."}`,
	`{"name": "demo-checkout-slots", "kind": "flow", "resource": "demo:POST /checkout", "metric": "concurrency", "threshold": 8,
		"description": "` + DescriptionPrefix + `at most 8 checkouts in flight."}`,
	`{"name": "demo-emails-pace", "kind": "flow", "resource": "demo:send-email", "threshold": 20,
		"controlBehavior": "throttling", "maxQueueingTimeMs": 500,
		"description": "` + DescriptionPrefix + `emails spaced evenly, 20 a second, queued for at most 500 ms."}`,
	`{"name": "demo-search-shadow", "kind": "flow", "resource": "demo:GET /search", "threshold": 30, "mode": "shadow",
		"description": "` + DescriptionPrefix + `a cap of 30 searches a second tried in shadow mode: counted, never enforced."}`,
	`{"name": "demo-payments-breaker", "kind": "circuitBreaker", "resource": "demo:POST /payments",
		"strategy": "errorRatio", "threshold": 0.5, "minRequestAmount": 5, "statIntervalMs": 5000, "retryTimeoutMs": 10000,
		"description": "` + DescriptionPrefix + `stops payments for 10 s when half of them fail; they do every few minutes."}`,
	`{"name": "demo-shop-per-user", "kind": "hotspot", "resource": "GET /orders/{id}", "paramKey": "header:X-User", "threshold": 1,
		"description": "` + DescriptionPrefix + `each user of the demo shop instances reads at most one order a second."}`,
	`{"name": "demo-shop-checkout", "kind": "flow", "resource": "POST /checkout", "threshold": 2,
		"description": "` + DescriptionPrefix + `each demo shop instance takes at most 2 checkouts a second."}`,
}

// seedDemo creates the demo rules that do not exist yet, through the rule
// domain's own write path, so the engine and the store agree. A demo rule
// that was changed is left as it is; one that was deleted comes back.
func seedDemo(ctx context.Context, svc *rules.Service) (int, error) {
	items := make([]json.RawMessage, len(demoRules))
	for i, r := range demoRules {
		items[i] = json.RawMessage(r)
	}
	want, err := rules.DecodeFile(items)
	if err != nil {
		return 0, err
	}
	return svc.Seed(ctx, want, rules.Actor{Name: "demo", Reason: "seeded by sluice --demo"})
}

// Start seeds the demo rules and starts their traffic through eng; Close
// the answer to stop it.
func Start(ctx context.Context, svc *rules.Service, eng *engine.Engine, logger *slog.Logger) (*Traffic, error) {
	created, err := seedDemo(ctx, svc)
	if err != nil {
		return nil, fmt.Errorf("seed the demo rules: %w", err)
	}
	d := startDemoTraffic(eng, demoTick)
	logger.Info("demo: driving synthetic traffic through the demo: resources", "rulesCreated", created)
	return d, nil
}

// demoTick is how often the demo traffic is sent.
const demoTick = 100 * time.Millisecond

// errDemoFailure is recorded for the demo calls that fail.
var errDemoFailure = errors.New("a demo call failed")

// demoStream is one demo resource's traffic.
type demoStream struct {
	resource string
	// perSecond is the call rate at t seconds into the demo.
	perSecond func(t float64) float64
	minRtMs   int64
	maxRtMs   int64
	// failRatio is the share of failed calls at t.
	failRatio func(t float64) float64
	// hold keeps calls in flight for their response time, for a
	// concurrency rule to see.
	hold bool
}

// wave swings between low and high with the period, starting mid-way.
func wave(low, high, periodSec float64) func(float64) float64 {
	return func(t float64) float64 {
		return low + (high-low)*(1+math.Sin(2*math.Pi*t/periodSec))/2
	}
}

func constant(v float64) func(float64) float64 { return func(float64) float64 { return v } }

var demoStreams = []demoStream{
	{resource: "demo:GET /orders", perSecond: wave(15, 75, 300), minRtMs: 10, maxRtMs: 60, failRatio: constant(0.01)},
	{resource: "demo:POST /checkout", perSecond: wave(8, 20, 240), minRtMs: 200, maxRtMs: 900, failRatio: constant(0.02), hold: true},
	{resource: "demo:send-email", perSecond: wave(10, 30, 180), minRtMs: 30, maxRtMs: 120, failRatio: constant(0)},
	{resource: "demo:GET /search", perSecond: wave(20, 50, 120), minRtMs: 5, maxRtMs: 40, failRatio: constant(0)},
	{resource: "demo:POST /payments", perSecond: constant(12), minRtMs: 50, maxRtMs: 250, failRatio: func(t float64) float64 {
		// Failing for 30 s every 3 minutes, which opens the breaker.
		if math.Mod(t, 180) >= 150 {
			return 0.7
		}
		return 0.02
	}},
}

// Traffic sends the demo streams through the engine until Close.
type Traffic struct {
	eng     *engine.Engine
	rng     *rand.Rand
	startMs int64
	streams []demoStream
	res     []*engine.Resource
	due     []float64 // calls owed to each stream, fractions carried over
	held    []heldCall

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// heldCall is a call kept in flight until endMs.
type heldCall struct {
	entry  engine.Entry
	endMs  int64
	failed bool
}

func newDemoTraffic(eng *engine.Engine) *Traffic {
	d := &Traffic{
		eng:     eng,
		rng:     rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		startMs: eng.Clock().NowMs(),
		streams: demoStreams,
		due:     make([]float64, len(demoStreams)),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	for _, s := range d.streams {
		d.res = append(d.res, eng.Resource(s.resource))
	}
	return d
}

func startDemoTraffic(eng *engine.Engine, tick time.Duration) *Traffic {
	d := newDemoTraffic(eng)
	go d.run(tick)
	return d
}

func (d *Traffic) run(tick time.Duration) {
	defer close(d.done)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-d.stop:
			for _, h := range d.held {
				h.entry.Exit()
			}
			return
		case <-ticker.C:
			d.send(tick)
		}
	}
}

// send makes one tick's calls: each stream's rate times the tick, and ends
// the held calls that are due.
func (d *Traffic) send(tick time.Duration) {
	now := d.eng.Clock().NowMs()
	t := float64(now-d.startMs) / 1000
	for i, s := range d.streams {
		d.due[i] += s.perSecond(t) * tick.Seconds() * (0.8 + 0.4*d.rng.Float64())
		for ; d.due[i] >= 1; d.due[i]-- {
			e, blk := d.res[i].Entry(engine.WithNoWait())
			if blk != nil {
				continue
			}
			rt := s.minRtMs + d.rng.Int64N(s.maxRtMs-s.minRtMs+1)
			failed := d.rng.Float64() < s.failRatio(t)
			if s.hold {
				d.held = append(d.held, heldCall{entry: e, endMs: now + rt, failed: failed})
				continue
			}
			e.Exit(engine.WithRtMs(rt), demoOutcome(failed))
		}
	}
	kept := d.held[:0]
	for _, h := range d.held {
		if h.endMs > now {
			kept = append(kept, h)
			continue
		}
		h.entry.Exit(demoOutcome(h.failed))
	}
	d.held = kept
}

func demoOutcome(failed bool) engine.ExitOption {
	if failed {
		return engine.WithError(errDemoFailure)
	}
	return engine.WithError(nil)
}

// Close stops the traffic and waits for it; nil-safe, and safe to call
// more than once.
func (d *Traffic) Close() {
	if d == nil {
		return
	}
	d.stopOnce.Do(func() { close(d.stop) })
	<-d.done
}
