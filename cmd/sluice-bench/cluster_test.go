package main

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// TestClusterFigures runs every cluster figure briefly on the throwaway
// Redis the command starts itself: the outage's kill and restart on the
// same port are seen by every engine, both ways.
func TestClusterFigures(t *testing.T) {
	err := run(t.Context(), []string{"cluster", "-accuracy", "2s", "-outage-up", "1s", "-outage-down", "1s",
		"-cost", "1s", "-cost-rate", "1000"})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSecondsBetween(t *testing.T) {
	start := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	counts := []int{10, 11, 12, 13, 14}
	tests := []struct {
		name     string
		from, to time.Duration
		want     []int
	}{
		{"whole seconds", time.Second, 3 * time.Second, []int{11, 12}},
		{"a part second at either end is left out", 1500 * time.Millisecond, 3500 * time.Millisecond, []int{12}},
		{"past the counts", 3 * time.Second, 9 * time.Second, []int{13, 14}},
		{"no whole second", 1200 * time.Millisecond, 1800 * time.Millisecond, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := secondsBetween(counts, start, start.Add(tt.from), start.Add(tt.to)); !slices.Equal(got, tt.want) {
				t.Errorf("secondsBetween = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSinceFirst(t *testing.T) {
	since := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return since.Add(time.Duration(ms) * time.Millisecond) }
	changes := [][]stateChange{
		{{engine.ClusterFallingBack, at(-500), nil}, {engine.ClusterShared, at(-400), nil}, {engine.ClusterFallingBack, at(20), nil}},
		{{engine.ClusterShared, at(5), nil}, {engine.ClusterFallingBack, at(30), nil}, {engine.ClusterFallingBack, at(90), nil}},
		{{engine.ClusterFallingBack, at(-10), nil}},
		{{engine.ClusterFallingBack, at(-20), nil}, {engine.ClusterShared, at(-10), nil}},
	}
	want := []time.Duration{20 * time.Millisecond, 30 * time.Millisecond, 0, -1}
	if got := sinceFirst(changes, engine.ClusterFallingBack, since); !slices.Equal(got, want) {
		t.Errorf("sinceFirst = %v, want %v", got, want)
	}
}
