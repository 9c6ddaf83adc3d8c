package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/store/pgtest"
)

// TestSeedSmall seeds a small data set and reads it back.
func TestSeedSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.db")
	var stdout, stderr strings.Builder
	err := run(t.Context(), []string{"--db", path, "--resources", "3", "--days", "1", "--end", "2026-03-02T10:00:30Z"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "seeded 4320 minute rows (3 resources x 1 days, up to 2026-03-02T10:00:00Z)") {
		t.Errorf("output:\n%s", stdout.String())
	}
	st, err := store.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	end := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixMilli()
	minutes, err := st.ResourceMetrics(t.Context(), "GET:/api/service-01/endpoint-0001", end-24*store.HourMs, end, store.MinuteMs)
	if err != nil || len(minutes) != 1440 {
		t.Fatalf("%d minutes (%v), want 1440", len(minutes), err)
	}
	hours, err := st.ResourceMetrics(t.Context(), "GET:/api/service-01/endpoint-0001", end-24*store.HourMs, end, store.HourMs)
	if err != nil || len(hours) != 24 {
		t.Fatalf("%d hours (%v), want 24", len(hours), err)
	}
	var fromMinutes, fromHours int64
	for _, m := range minutes {
		fromMinutes += m.Pass
	}
	for _, h := range hours {
		fromHours += h.Pass
	}
	if fromMinutes == 0 || fromMinutes != fromHours {
		t.Errorf("passes: %d from minutes, %d from hours; want equal and some", fromMinutes, fromHours)
	}
}

// TestSeedPostgresMatchesSQLite seeds the same plan on a SQLite file and
// on a real PostgreSQL, by COPY there: every minute and every rollup of a
// resource read through the store is the same on both; a second seed of
// the PostgreSQL database is refused, not added to.
func TestSeedPostgresMatchesSQLite(t *testing.T) {
	args := []string{"--resources", "3", "--days", "2", "--end", "2026-03-02T10:00:30Z", "--seed", "7"}
	path := filepath.Join(t.TempDir(), "bench.db")
	url := pgtest.StartForTest(t).NewDatabase(t)
	for _, db := range []string{path, url} {
		var stdout, stderr strings.Builder
		if err := run(t.Context(), append([]string{"--db", db}, args...), &stdout, &stderr); err != nil {
			t.Fatalf("run on %s: %v\n%s", db, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), "seeded 8640 minute rows") {
			t.Errorf("output on %s:\n%s", db, stdout.String())
		}
	}
	var stdout, stderr strings.Builder
	if err := run(t.Context(), append([]string{"--db", url}, args...), &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "minute rows already") {
		t.Errorf("a second seed on PostgreSQL = %v, want it refused", err)
	}

	lite, err := store.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg, err := store.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	end := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixMilli()
	for _, name := range []string{resourceName(0), resourceName(2)} {
		for _, step := range []int64{store.MinuteMs, store.FiveMinutesMs, store.HourMs, store.DayMs} {
			want, err := lite.ResourceMetrics(t.Context(), name, end-2*store.DayMs, end, step)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pg.ResourceMetrics(t.Context(), name, end-2*store.DayMs, end, step)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 || !reflect.DeepEqual(got, want) {
				t.Errorf("%s at step %d ms: PostgreSQL has %d buckets, SQLite %d, or they differ", name, step, len(got), len(want))
			}
		}
	}
}

func TestSeedRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--db", "x.db", "--resources", "0"},
		{"--db", "x.db", "--end", "tomorrow"},
	} {
		var stdout, stderr strings.Builder
		if err := run(t.Context(), args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) succeeded, want an error", args)
		}
	}
}
