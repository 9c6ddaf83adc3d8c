package engine

import (
	"reflect"
	"testing"
)

// TestBlocksByRule: a minute's blocks come out per rule that blocked, the
// rules of several kinds on one resource, a rule replaced within the
// minute still counted, and the refusals no rule of the resource decided
// under ReasonSystem; per minute, summed over the collections, the rules'
// blocks sum to the minute's Block.
func TestBlocksByRule(t *testing.T) {
	const minute0 = 1_700_000_040_000
	e, clock := newTestEngine(t, minute0, FlowRule{Name: "cap", Resource: "orders", Threshold: 3})
	if err := e.LoadHotspotRules([]HotspotRule{{Name: "per-user", Resource: "orders", ParamKey: "user", Threshold: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := e.LoadAuthorityRules([]AuthorityRule{{Name: "no-crawler", Resource: "orders", Strategy: AuthorityDeny, Origins: []string{"crawler"}}}); err != nil {
		t.Fatal(err)
	}
	orders := e.Resource("orders")
	call := func(user string, opts ...EntryOption) *BlockError {
		en, blk := orders.Entry(append(opts, WithParam("user", user))...)
		if blk == nil {
			en.Exit()
		}
		return blk
	}
	wantReason := func(blk *BlockError, reason BlockReason) {
		t.Helper()
		if blk == nil || blk.Reason() != reason {
			t.Fatalf("block = %v, want one of reason %s", blk, reason)
		}
	}

	type key struct {
		reason BlockReason
		rule   string
	}
	blocks := map[int64]int64{}
	byRule := map[int64]map[key]int64{}
	collect := func() {
		for _, m := range e.CollectMinutes() {
			if m.Resource != "orders" {
				continue
			}
			blocks[m.StartMs] += m.Block
			if byRule[m.StartMs] == nil {
				byRule[m.StartMs] = map[key]int64{}
			}
			for _, b := range m.BlockedBy {
				byRule[m.StartMs][key{b.Reason, b.Rule}] += b.Blocked
			}
		}
	}

	clock.Set(minute0 + 1_000)
	wantReason(call("ann", WithOrigin("crawler")), ReasonAuthority)
	clock.Set(minute0 + 2_000)
	if call("ann") != nil {
		t.Fatal("ann's first call blocked")
	}
	wantReason(call("ann"), ReasonHotspot)
	for _, user := range []string{"bob", "carl"} {
		if blk := call(user); blk != nil {
			t.Fatalf("%s's call: %v", user, blk)
		}
	}
	wantReason(call("dan"), ReasonFlow)
	orders.Tally(false, 4)
	collect()

	// The flow rule changes: its new checker counts from zero, the old
	// one's blocks since the collection are still handed out.
	wantReason(call("eve"), ReasonFlow)
	if err := e.LoadFlowRules([]FlowRule{{Name: "cap", Resource: "orders", Threshold: 5}}); err != nil {
		t.Fatal(err)
	}
	clock.Set(minute0 + 3_000)
	for i, user := range []string{"a", "b", "c", "d", "e", "f"} {
		if blk := call(user); (blk != nil) != (i == 5) {
			t.Fatalf("call %d: %v", i, blk)
		}
	}
	// Late in the minute, collected after it ended.
	clock.Set(minute0 + 59_999)
	wantReason(call("zed", WithOrigin("crawler")), ReasonAuthority)
	clock.Set(minute0 + 60_500)
	wantReason(call("zed", WithOrigin("crawler")), ReasonAuthority)
	collect()

	want := map[int64]map[key]int64{
		minute0: {
			{ReasonAuthority, "no-crawler"}: 2,
			{ReasonHotspot, "per-user"}:     1,
			{ReasonFlow, "cap"}:             3,
			{ReasonSystem, ""}:              4,
		},
		minute0 + 60_000: {{ReasonAuthority, "no-crawler"}: 1},
	}
	if !reflect.DeepEqual(byRule, want) {
		t.Fatalf("blocks by rule = %v, want %v", byRule, want)
	}
	for start, perRule := range byRule {
		var sum int64
		for _, n := range perRule {
			sum += n
		}
		if sum != blocks[start] {
			t.Errorf("minute %d: rules' blocks sum to %d, Block is %d", start, sum, blocks[start])
		}
	}
}

// TestBlockTallyMinutes: a tally keeps two minutes apart, hands each out
// once with its start, and reuses the slot of the minute before last.
func TestBlockTallyMinutes(t *testing.T) {
	const minute0 = 1_700_000_040_000
	var tally blockTally
	tally.add(minute0+5, 2)
	tally.add(minute0+60_000, 3)
	tally.add(minute0+60_001, 1)
	got := tally.drain(minute0+61_000, ReasonFlow, "r", nil)
	want := []minuteBlocks{
		{minute0, RuleBlocks{ReasonFlow, "r", 2}},
		{minute0 + 60_000, RuleBlocks{ReasonFlow, "r", 4}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("drain = %v, want %v", got, want)
	}
	if again := tally.drain(minute0+61_000, ReasonFlow, "r", nil); len(again) != 0 {
		t.Fatalf("second drain = %v, want nothing", again)
	}
	tally.add(minute0+120_000, 7)
	got = tally.drain(minute0+150_000, ReasonFlow, "r", nil)
	if want := []minuteBlocks{{minute0 + 120_000, RuleBlocks{ReasonFlow, "r", 7}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("drain of a reused slot = %v, want %v", got, want)
	}
}
