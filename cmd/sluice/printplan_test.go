package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/impact"
	"github.com/sluicehq/sluice/server/rules"
)

// TestPrintPlanSaysTheImpact: a dry run's plan prints, under a created
// rule, what it would have blocked per range and the minute it would have
// blocked most in, and its notes.
func TestPrintPlanSaysTheImpact(t *testing.T) {
	burst := time.Date(2026, 11, 24, 14, 5, 0, 0, time.UTC)
	plan := rules.ApplyPlan{DryRun: true, Created: []rules.PlanItem{{Name: "orders-qps", Kind: "flow", Resource: "orders",
		Impact: &impact.Estimate{Ranges: []impact.RangeEstimate{
			{Range: "24h", Calls: 90_000, MinutesBlocked: 2, BlockedLow: 310, BlockedHigh: 2_300, Minutes: []impact.MinuteEstimate{
				{Time: burst.Add(-time.Hour), Calls: 500, BusiestSecond: 110, BlockedLow: 10, BlockedHigh: 100},
				{Time: burst, Calls: 3_000, BusiestSecond: 400, BlockedLow: 300, BlockedHigh: 2_200}}},
			{Range: "7d", Calls: 600_000},
		}, Notes: []string{"a hotspot rule"}}}}}
	var out strings.Builder
	printPlan(&out, plan)
	for _, want := range []string{
		"impact over 24h (estimate): would have blocked 310 to 2300 of 90000 calls, in 2 minutes; most at 2026-11-24 14:05 UTC (3000 calls, 400 in its busiest second)",
		"impact over 7d (estimate): would have blocked nothing of 600000 calls",
		"note: a hotspot rule",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the plan printed:\n%s\nwant a line with %q", out.String(), want)
		}
	}
}
