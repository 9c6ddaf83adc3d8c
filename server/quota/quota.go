package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/window"
	"github.com/sluicehq/sluice/store"
)

// DefaultSaveInterval is how often a Keeper saves: what a crash (not a
// shutdown, which saves) may forget of a quota's passes.
const DefaultSaveInterval = 5 * time.Second

// Restore gives eng the quota windows node saved last, and returns how
// many; call it before the rules load.
func Restore(ctx context.Context, eng *engine.Engine, st *store.Store, node string) (int, error) {
	rows, err := st.QuotaWindows(ctx, node)
	if err != nil {
		return 0, fmt.Errorf("quota: read the saved windows: %w", err)
	}
	ws := make([]engine.QuotaWindow, 0, len(rows))
	for _, row := range rows {
		var spans [][2]int64
		if err := json.Unmarshal([]byte(row.Spans), &spans); err != nil {
			return 0, fmt.Errorf("quota: the saved window of rule %q: %w", row.Rule, err)
		}
		w := engine.QuotaWindow{Resource: row.Resource, Rule: row.Rule, Value: row.Value, Spans: make([]window.Marked, len(spans))}
		for i, s := range spans {
			w.Spans[i] = window.Marked{AtMs: s[0], Passes: s[1]}
		}
		ws = append(ws, w)
	}
	eng.RestoreQuotaWindows(ws)
	return len(ws), nil
}

// Save writes the quota windows of eng as node's, replacing its last save.
func Save(ctx context.Context, eng *engine.Engine, st *store.Store, node string) error {
	return save(ctx, eng.QuotaWindows(), st, node)
}

func save(ctx context.Context, ws []engine.QuotaWindow, st *store.Store, node string) error {
	rows := make([]store.QuotaWindow, len(ws))
	for i, w := range ws {
		spans := make([][2]int64, len(w.Spans))
		for j, s := range w.Spans {
			spans[j] = [2]int64{s.AtMs, s.Passes}
		}
		b, err := json.Marshal(spans)
		if err != nil {
			return err
		}
		rows[i] = store.QuotaWindow{Resource: w.Resource, Rule: w.Rule, Value: w.Value, Spans: string(b)}
	}
	return st.SaveQuotaWindows(ctx, node, rows)
}

// Keeper saves the quota windows of an engine every interval until Stop.
type Keeper struct {
	eng    *engine.Engine
	st     *store.Store
	node   string
	logger *slog.Logger
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	// savedNone is true once a save wrote no window: until one has
	// passes again, there is nothing to write (most servers have no
	// quota), so the store is not asked.
	savedNone bool
}

// Start starts a Keeper saving eng's quota windows as node's every
// interval (DefaultSaveInterval if 0); saved is how many node has saved
// (Restore's count).
func Start(eng *engine.Engine, st *store.Store, node string, saved int, interval time.Duration, logger *slog.Logger) *Keeper {
	if interval <= 0 {
		interval = DefaultSaveInterval
	}
	k := &Keeper{eng: eng, st: st, node: node, logger: logger, stop: make(chan struct{}), done: make(chan struct{}), savedNone: saved == 0}
	go k.run(interval)
	return k
}

func (k *Keeper) run(interval time.Duration) {
	defer close(k.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), interval)
			if err := k.save(ctx); err != nil {
				k.logger.Warn("quota: could not save the quota windows; a crash now would forget the passes since the last save", "error", err)
			}
			cancel()
		}
	}
}

// Stop ends the saves and saves once more, last: call it once nothing
// more is counted.
func (k *Keeper) Stop(ctx context.Context) error {
	k.once.Do(func() { close(k.stop) })
	<-k.done
	return k.save(ctx)
}

// save saves the windows unless they are none again. Called by one
// goroutine at a time: run's, then Stop's.
func (k *Keeper) save(ctx context.Context) error {
	ws := k.eng.QuotaWindows()
	if len(ws) == 0 && k.savedNone {
		return nil
	}
	if err := save(ctx, ws, k.st, k.node); err != nil {
		return err
	}
	k.savedNone = len(ws) == 0
	return nil
}
