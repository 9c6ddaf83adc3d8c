package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/store"
)

// eventResourceBlockRate is the event type of a sustained block rate
// (docs/webhooks.md).
const eventResourceBlockRate = "resource.blockRate"

// DefaultBlockRateInterval is Config.BlockRateInterval's default.
const DefaultBlockRateInterval = 30 * time.Second

// Defaults of an endpoint's block-rate condition.
const (
	defaultBlockRatePercent = 50
	defaultBlockRateMinutes = 5
	maxBlockRateMinutes     = 60
)

// blockRateSettle is how long after a minute ends its figures are taken
// as complete: the metric flush (10 s by default) writes them by then.
const blockRateSettle = 15 * time.Second

// BlockRateEvent is the data of a resource.blockRate event: in each of the
// last minutes, the resource's calls (the fleet's, at least 10 a minute)
// were blocked at or over the endpoint's percent.
type BlockRateEvent struct {
	Resource string `json:"resource" example:"POST:/api/pay"`
	// Percent and Minutes are the endpoint's condition.
	Percent int       `json:"percent" example:"50"`
	Minutes int       `json:"minutes" example:"5"`
	From    time.Time `json:"from" format:"date-time"`
	To      time.Time `json:"to" format:"date-time"`
}

// watchBlockRates evaluates, every interval until stop is called, the
// block-rate condition of each enabled endpoint that takes
// resource.blockRate events, and announces each resource that meets it,
// once until it no longer does.
func watchBlockRates(st *store.Store, interval time.Duration, now func() time.Time, logger *slog.Logger) (stop func()) {
	return every(interval, func(ctx context.Context) {
		if err := announceBlockRates(ctx, st, now()); err != nil && ctx.Err() == nil {
			logger.Error("webhooks: evaluating the block rates failed", "error", err)
		}
	})
}

// every runs fn every interval on a goroutine of its own until stop is
// called, which waits for a run in progress; fn's context ends then.
func every(interval time.Duration, fn func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			fn(ctx)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// announceBlockRates evaluates every endpoint's condition at now.
func announceBlockRates(ctx context.Context, st *store.Store, now time.Time) error {
	endpoints, err := st.Webhooks(ctx)
	if err != nil {
		return err
	}
	toMs := now.Add(-blockRateSettle).Truncate(time.Minute).UnixMilli()
	for _, e := range endpoints {
		if !e.Enabled || e.App != "" || !e.Wants(eventResourceBlockRate, []string{""}, []string{e.Resource}) {
			continue
		}
		fromMs := toMs - int64(e.BlockRateMinutes)*store.MinuteMs
		hot, err := st.SustainedBlocks(ctx, fromMs, toMs, e.BlockRatePercent)
		if err != nil {
			return err
		}
		if e.Resource != "" {
			hot = slices.DeleteFunc(hot, func(r string) bool { return r != e.Resource })
		}
		alerted, err := st.BlockAlerts(ctx, e.ID)
		if err != nil {
			return err
		}
		for _, r := range hot {
			if slices.Contains(alerted, r) {
				continue
			}
			data, _ := json.Marshal(BlockRateEvent{
				Resource: r, Percent: e.BlockRatePercent, Minutes: e.BlockRateMinutes,
				From: time.UnixMilli(fromMs).UTC(), To: time.UnixMilli(toMs).UTC(),
			}) // plain structs always encode
			a := store.Announcement{Type: eventResourceBlockRate, Data: data, Resources: []string{r}}
			if _, err := st.StartBlockAlert(ctx, e.ID, r, a); err != nil {
				return err
			}
		}
		for _, r := range alerted {
			if !slices.Contains(hot, r) {
				if err := st.EndBlockAlert(ctx, e.ID, r); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
