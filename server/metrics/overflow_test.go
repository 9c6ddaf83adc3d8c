package metrics

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// TestOverflowWarning: the pipeline warns that the engine is full at most
// once a minute, with the calls since the last warning and a name.
func TestOverflowWarning(t *testing.T) {
	clock := engine.NewManualClock(t0)
	eng := engine.New(engine.Options{Clock: clock, MaxResources: 1})
	t.Cleanup(eng.Close)
	var logs strings.Builder // check runs on this goroutine only
	w := &overflowWatch{engine: eng, clock: clock, logger: slog.New(slog.NewTextHandler(&logs, nil))}
	warnings := func() []string {
		var out []string
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, "level=WARN") {
				out = append(out, line)
			}
		}
		return out
	}
	calls := func(names ...string) {
		for _, name := range names {
			if en, blk := eng.Entry(name); blk == nil {
				en.Exit()
			}
		}
	}

	calls("tracked", "tracked")
	w.check()
	calls("x-1", "x-2", "x-3")
	w.check()
	clock.Advance(30_000)
	calls("x-4", "x-5")
	w.check()
	if got := warnings(); len(got) != 1 || !strings.Contains(got[0], "calls=3 ") || !strings.Contains(got[0], "maxResources=1 ") || !strings.Contains(got[0], "example=x-1") {
		t.Fatalf("warnings %q, want one for the first 3 calls", got)
	}
	clock.Advance(30_000)
	w.check()
	clock.Advance(5 * 60_000)
	w.check()
	if got := warnings(); len(got) != 2 || !strings.Contains(got[1], "calls=2 ") {
		t.Fatalf("warnings %q, want a second one, a minute later, for the next 2 calls and no more", got)
	}
}
