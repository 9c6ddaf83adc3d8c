package main

import (
	"slices"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/servertest"
)

// TestWarmUpCurve: the curve accuracy -warmup compares with is Guava's and
// Sentinel's for a threshold of 100, a 10 s warm-up and a cold factor of 3.
func TestWarmUpCurve(t *testing.T) {
	want := []int{33, 34, 36, 38, 41, 44, 47, 52, 58, 68, 83, 100, 100}
	if got := warmUpCurve(100, len(want)); !slices.Equal(got, want) {
		t.Fatalf("warm-up curve %v, want %v", got, want)
	}
}

// TestPacedAccuracy runs accuracy's paced shape against a real server: it
// creates its rule, sends on schedule and holds the threshold.
func TestPacedAccuracy(t *testing.T) {
	url := servertest.Start(t, func(env servertest.Env) (servertest.Server, error) {
		return server.New(t.Context(), server.Config{
			Engine: env.Engine, Store: env.Store, Logger: env.Logger,
			BootstrapToken: servertest.AdminToken, PasswordCost: bcrypt.MinCost,
		})
	}).URL
	err := run(t.Context(), []string{"accuracy", "-server", url, "-token", servertest.AdminToken,
		"-threshold", "10", "-rate", "15", "-duration", "2s"})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFleetFigures runs the fleet's commands, briefly, against a real
// server: reporters' simulated instances are all accepted, and
// instance-overhead's client takes its rules from the server.
func TestFleetFigures(t *testing.T) {
	url := servertest.Start(t, func(env servertest.Env) (servertest.Server, error) {
		return server.New(t.Context(), server.Config{
			Engine: env.Engine, Store: env.Store, Logger: env.Logger,
			BootstrapToken: servertest.AdminToken, PasswordCost: bcrypt.MinCost,
		})
	}).URL
	for _, args := range [][]string{
		{"reporters", "-instances", "5", "-resources", "3", "-duration", "2s"},
		{"instance-overhead", "-rate", "1000", "-duration", "1s"},
	} {
		if err := run(t.Context(), append(args, "-server", url, "-token", servertest.AdminToken)); err != nil {
			t.Fatalf("%s: %v", args[0], err)
		}
	}
}
