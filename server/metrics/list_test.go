package metrics

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// TestMergedNames: a page of the catalogue less skip, merged with extra,
// is the slice of that list, for random sets, every offset and filter.
func TestMergedNames(t *testing.T) {
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "sluice.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var universe []string
	for i := range 60 {
		universe = append(universe, fmt.Sprintf("%c-r%02d", "aBcD"[i%4], i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var stored, others []string
	for _, name := range universe {
		if rng.IntN(3) > 0 {
			stored = append(stored, name)
			continue
		}
		others = append(others, name)
	}
	var deltas []store.MinuteDelta
	for _, name := range stored {
		deltas = append(deltas, store.MinuteDelta{Resource: name, StartMs: t0, Counts: engine.Counts{Calls: engine.Calls{Pass: 1}}})
	}
	if err := st.AddMetrics(t.Context(), deltas); err != nil {
		t.Fatal(err)
	}
	p := &Pipeline{store: st}
	pick := func(from []string, q string) []string {
		var out []string
		for _, name := range from {
			if rng.IntN(4) == 0 && store.NameContains(name, q) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	for trial := range 12 {
		q := []string{"", "b", "R1", "d-"}[trial%4]
		skip, extra := pick(stored, q), pick(others, q)
		var want []string
		for _, name := range stored {
			if _, skipped := slices.BinarySearch(skip, name); !skipped && store.NameContains(name, q) {
				want = append(want, name)
			}
		}
		want = append(want, extra...)
		slices.Sort(want)
		for _, limit := range []int{1, 2, 5, 50} {
			for offset := range len(want) + 2 {
				got, err := p.mergedNames(t.Context(), q, skip, extra, offset, limit)
				if err != nil {
					t.Fatal(err)
				}
				if w := want[min(offset, len(want)):min(offset+limit, len(want))]; !slices.Equal(got, w) {
					t.Fatalf("q %q, skip %q, extra %q, offset %d, limit %d:\n got %q\nwant %q", q, skip, extra, offset, limit, got, w)
				}
			}
		}
	}
}
