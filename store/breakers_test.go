package store

import (
	"context"
	"slices"
	"testing"
)

func TestBreakerTransitions(t *testing.T) {
	st, _ := openTestStore(t)
	ctx := context.Background()
	add := []BreakerTransition{
		{AtMs: 1000, Rule: "a", Resource: "pay", From: "closed", To: "open"},
		{AtMs: 1000, Rule: "a", Resource: "pay", From: "open", To: "halfOpen"},
		{AtMs: 1000, Rule: "a", Resource: "pay", From: "halfOpen", To: "closed"},
		{AtMs: 1500, Rule: "b", Resource: "orders", From: "closed", To: "open"},
		{AtMs: 3000, Rule: "a", Resource: "pay", From: "closed", To: "open"},
	}
	if err := st.AddBreakerTransitions(ctx, add); err != nil {
		t.Fatal(err)
	}
	tos := func(ts []BreakerTransition) []string {
		var out []string
		for _, tr := range ts {
			out = append(out, tr.Resource+":"+tr.To)
		}
		return out
	}
	for _, tt := range []struct {
		resource string
		from, to int64
		limit    int
		want     []string
	}{
		{"", 0, 5000, 10, []string{"pay:open", "pay:halfOpen", "pay:closed", "orders:open", "pay:open"}},
		{"pay", 0, 3000, 10, []string{"pay:open", "pay:halfOpen", "pay:closed"}},
		{"", 1000, 5000, 2, []string{"orders:open", "pay:open"}},
		{"orders", 2000, 5000, 10, nil},
	} {
		got, err := st.BreakerTransitions(ctx, tt.resource, tt.from, tt.to, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tos(got), tt.want) {
			t.Errorf("%q [%d, %d) limit %d = %v, want %v", tt.resource, tt.from, tt.to, tt.limit, tos(got), tt.want)
		}
	}
	deleted, err := st.PruneBreakerTransitions(ctx, 2000, 2)
	if err != nil || deleted != 4 {
		t.Fatalf("prune = %d, %v; want 4 deleted", deleted, err)
	}
	if got, _ := st.BreakerTransitions(ctx, "", 0, 5000, 10); !slices.Equal(tos(got), []string{"pay:open"}) {
		t.Errorf("after the prune: %v", tos(got))
	}
}
