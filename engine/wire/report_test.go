package wire

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// TestBlocksOfFoldsPastTheBound: a minute's blocks by rule are sent as
// they are up to MaxReportBlocks entries; past it, the rules that blocked
// least are summed per reason under the rule "", and the entries still sum
// to the minute's blocks.
func TestBlocksOfFoldsPastTheBound(t *testing.T) {
	var list []engine.RuleBlocks
	var total int64
	for i := range 100 {
		reason := engine.ReasonFlow
		if i%2 == 1 {
			reason = engine.ReasonHotspot
		}
		list = append(list, engine.RuleBlocks{Reason: reason, Rule: fmt.Sprintf("r%d", i), Blocked: int64(i + 1)})
		total += int64(i + 1)
	}
	if got := BlocksOf(list[:MaxReportBlocks]); len(got) != MaxReportBlocks || got[0].Rule != "r0" {
		t.Fatalf("at the bound: %d entries, first %+v; want them all, as they came", len(got), got[0])
	}
	got := BlocksOf(list)
	if len(got) > MaxReportBlocks {
		t.Fatalf("%d entries, want at most %d", len(got), MaxReportBlocks)
	}
	var sum int64
	folded := map[string]int64{}
	for _, b := range got {
		sum += b.Blocked
		if b.Rule == "" {
			folded[b.Reason] = b.Blocked
		} else if b.Blocked <= 100-int64(MaxReportBlocks-8) {
			t.Errorf("%+v kept, though it blocked less than a folded rule", b)
		}
	}
	if sum != total || len(folded) != 2 {
		t.Errorf("entries sum to %d with folds %v, want %d with one fold per reason", sum, folded, total)
	}
}
