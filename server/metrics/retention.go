package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/store"
)

// pruneBatchRows is how many rows one retention transaction deletes, so
// that a flush never waits long behind it.
const pruneBatchRows = 1000

// Prune deletes the rows older than retention, cut at a whole UTC hour so
// that every step of the history agrees on what is left: up to an hour more
// than retention is kept. The circuit breaker transitions go with them: a
// timeline reaches as far back as the charts beside it; and so do the
// heartbeats, which say which of their minutes the server was up in. Options.Purge runs
// after them, whether they failed or not.
func (p *Pipeline) Prune(ctx context.Context, retention time.Duration) error {
	cutMs := p.NowMs() - retention.Milliseconds()
	cutMs -= ((cutMs % store.HourMs) + store.HourMs) % store.HourMs
	deleted, err := p.store.PruneMetrics(ctx, cutMs, pruneBatchRows)
	if err != nil {
		return err
	}
	transitions, err := p.store.PruneBreakerTransitions(ctx, cutMs, pruneBatchRows)
	beats, beatErr := p.store.PruneHeartbeats(ctx, cutMs, pruneBatchRows)
	err = errors.Join(err, beatErr)
	if deleted += transitions + beats; deleted > 0 {
		p.logger.Info("metrics: retention deleted old rows", "rows", deleted, "before", time.UnixMilli(cutMs).UTC())
	}
	if p.purge != nil {
		err = errors.Join(err, p.purge(ctx))
	}
	return err
}
