package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "sluice-seed:", err)
		}
		os.Exit(1)
	}
}

// seedPlan is what to generate.
type seedPlan struct {
	resources int
	days      int
	endMs     int64 // exclusive, a whole minute
	seed      uint64
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sluice-seed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := fs.String("db", "", "SQLite database file to fill, created if missing, or PostgreSQL URL of a database without minute rows (required)")
	resources := fs.Int("resources", 1000, "how many resources")
	days := fs.Int("days", 7, "how many days of minutes, up to --end")
	end := fs.String("end", "", "end of the range, RFC 3339 (default: now, rounded down to the minute)")
	randomSeed := fs.Uint64("seed", 1, "random seed: the same seed gives the same data")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dbPath == "" || *resources < 1 || *days < 1 {
		fs.Usage()
		return errors.New("--db is required; --resources and --days must be at least 1")
	}
	endTime := time.Now()
	if *end != "" {
		t, err := time.Parse(time.RFC3339, *end)
		if err != nil {
			return fmt.Errorf("--end: %w", err)
		}
		endTime = t
	}
	plan := seedPlan{resources: *resources, days: *days, endMs: endTime.Truncate(time.Minute).UnixMilli(), seed: *randomSeed}

	st, err := store.Open(ctx, *dbPath, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	start := time.Now()
	var rows int64
	if store.IsPostgres(*dbPath) {
		// Migrated by Open; written by COPY, not through the store.
		if err := st.Close(); err != nil {
			return err
		}
		if rows, err = seedPostgres(ctx, *dbPath, plan); err != nil {
			return err
		}
	} else {
		rows, err = seed(ctx, st, plan)
		// Closing the last connection checkpoints the WAL into the file,
		// so that its size below is the whole database.
		if err := errors.Join(err, st.Close()); err != nil {
			return err
		}
	}
	took := time.Since(start)
	fmt.Fprintf(stdout, "seeded %d minute rows (%d resources x %d days, up to %s) in %v\n",
		rows, plan.resources, plan.days, time.UnixMilli(plan.endMs).UTC().Format(time.RFC3339), took.Round(time.Millisecond))
	if store.IsPostgres(*dbPath) {
		return nil // the size is the server's business: pg_database_size
	}
	info, err := os.Stat(*dbPath)
	if err != nil {
		return err
	}
	mib := float64(info.Size()) / (1 << 20)
	fmt.Fprintf(stdout, "%s: %.1f MiB, %.1f MiB per million minute rows (rollups and resources included)\n",
		*dbPath, mib, mib/(float64(rows)/1e6))
	return nil
}

// seed writes one transaction per resource and day, through the store's
// flush path (minute rows, rollups, resources).
func seed(ctx context.Context, st *store.Store, plan seedPlan) (int64, error) {
	rng := rand.New(rand.NewPCG(plan.seed, plan.seed^0x5eed))
	startMs := plan.endMs - int64(plan.days)*24*store.HourMs
	var rows int64
	batch := make([]store.MinuteDelta, 0, 24*60)
	for i := range plan.resources {
		name := resourceName(i)
		profile := newTrafficProfile(rng, i)
		for dayMs := startMs; dayMs < plan.endMs; dayMs += 24 * store.HourMs {
			batch = batch[:0]
			for m := dayMs; m < min(dayMs+24*store.HourMs, plan.endMs); m += store.MinuteMs {
				batch = append(batch, store.MinuteDelta{Resource: name, StartMs: m, Counts: profile.minute(rng, m)})
			}
			if err := st.AddMetrics(ctx, batch); err != nil {
				return rows, err
			}
			rows += int64(len(batch))
		}
	}
	return rows, nil
}

// resourceName names the i-th resource of a data set.
func resourceName(i int) string {
	return fmt.Sprintf("GET:/api/service-%02d/endpoint-%04d", i%50, i)
}

// trafficProfile is one resource's habits.
type trafficProfile struct {
	passPerMinute float64 // at the daily peak
	blockShare    float64
	errorShare    float64
	rtMs          float64
}

func newTrafficProfile(rng *rand.Rand, i int) trafficProfile {
	p := trafficProfile{
		passPerMinute: 60 * math.Exp(rng.Float64()*6), // 60 to ~24,000 a minute
		errorShare:    rng.Float64() * 0.02,
		rtMs:          2 + rng.ExpFloat64()*40,
	}
	if i%7 == 0 { // some resources hit their limits
		p.blockShare = rng.Float64() * 0.3
	}
	return p
}

// minute draws one minute of traffic: a daily wave, peaking at 14:00 UTC,
// with noise.
func (p trafficProfile) minute(rng *rand.Rand, startMs int64) engine.Counts {
	dayFraction := float64(startMs%(24*store.HourMs)) / float64(24*store.HourMs)
	wave := 0.55 + 0.45*math.Cos(2*math.Pi*(dayFraction-14.0/24))
	calls := p.passPerMinute * wave * (0.8 + 0.4*rng.Float64())
	pass := int64(calls*(1-p.blockShare)) + 1
	block := int64(calls * p.blockShare)
	errs := int64(float64(pass) * p.errorShare)
	avg := p.rtMs * (0.7 + 0.6*rng.Float64())
	return engine.Counts{
		Calls:          engine.Calls{Pass: pass, Block: block, Complete: pass, Error: errs},
		RtSumMs:        int64(avg * float64(pass)),
		MinRtMs:        max(0, int64(avg/4)),
		MaxRtMs:        int64(avg*4) + 1,
		MaxConcurrency: 1 + int64(float64(pass)*avg/60_000),
	}
}
