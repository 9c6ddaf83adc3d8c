package remote

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
)

const (
	// maxMinutesPerReport bounds a report's minutes, so that a buffer
	// full of them drains in bodies the server takes.
	maxMinutesPerReport = 1000
	// reportTimeout bounds a report's request.
	reportTimeout = 10 * time.Second
	// maxLivePerReport bounds a report's live figures: past it, the
	// busiest resources are sent.
	maxLivePerReport = 1000
	// closeReportTimeout bounds Close's last reports.
	closeReportTimeout = 5 * time.Second
	// minuteMs is the length of a reported minute.
	minuteMs = 60_000
)

// minuteKey identifies a minute of a resource.
type minuteKey struct {
	resource string
	startMs  int64
}

// reporter gathers the engine's minutes until they are finished, and
// keeps the finished ones until the server takes them.
type reporter struct {
	max int
	// delayMs is how long a minute waits, once over, before it is
	// finished (Config.MinuteSpread).
	delayMs int64

	// cycle is held by a collection and the post that follows it, so
	// that minutes leave the outbox only as the server took them.
	cycle sync.Mutex
	// Guarded by cycle: the minutes not finished yet, as collected so
	// far, and buffers reused from one report to the next.
	open map[minuteKey]engine.Counts
	// openBlocks splits the Block of open's minutes by rule.
	openBlocks map[minuteKey][]engine.RuleBlocks
	finished   []minuteKey
	live       []wire.ReportLive
	body       bytes.Buffer

	// unsent are the minutes earlier Clients on the cache directory
	// could not report, by file. Guarded by cycle.
	unsent map[string]unsent

	mu      sync.Mutex // guards outbox and dropped; cycle alone changes them
	outbox  []wire.ReportMinute
	dropped int64
}

// maxMinuteSpread bounds Config.MinuteSpread: a finished minute waits in
// the reporter, which collects every ReportInterval, and posting it before
// the next minute ends keeps a report to about a minute of rows.
const maxMinuteSpread = 50 * time.Second

// spreadDelay draws a Client's delay of its finished minutes, in [0,
// spread).
func spreadDelay(spread time.Duration) time.Duration {
	if spread <= 0 {
		return 0
	}
	return rand.N(spread)
}

func newReporter(maxMinutes int, delay time.Duration) *reporter {
	return &reporter{
		max:        maxMinutes,
		delayMs:    delay.Milliseconds(),
		open:       map[minuteKey]engine.Counts{},
		openBlocks: map[minuteKey][]engine.RuleBlocks{},
		live:       make([]wire.ReportLive, 0, 16),
		outbox:     make([]wire.ReportMinute, 0, 16),
	}
}

// counts returns how many finished minutes wait and how many were
// dropped.
func (r *reporter) counts() (buffered int, dropped int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.outbox), r.dropped
}

// collect takes what s recorded since the last collection, and moves the
// minutes that are over, by the reporter's delay, to the outbox, or every
// minute with all (the engine counts no more). The oldest minutes are dropped past the
// outbox's bound. The caller holds cycle.
func (r *reporter) collect(s Stats, all bool) {
	// Read before collecting: a minute over by then was collected whole.
	nowMs := s.NowMs()
	for _, st := range s.CollectMinutes() {
		k := minuteKey{st.Resource, st.StartMs}
		counts := r.open[k]
		counts.Merge(st.Counts)
		r.open[k] = counts
		if len(st.BlockedBy) > 0 {
			r.openBlocks[k] = engine.MergeBlocks(r.openBlocks[k], st.BlockedBy)
		}
	}
	r.finished = r.finished[:0]
	for k := range r.open {
		if all || k.startMs+minuteMs+r.delayMs <= nowMs {
			r.finished = append(r.finished, k)
		}
	}
	if len(r.finished) == 0 {
		return
	}
	slices.SortFunc(r.finished, func(a, b minuteKey) int {
		return cmp.Or(cmp.Compare(a.startMs, b.startMs), cmp.Compare(a.resource, b.resource))
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.finished {
		r.outbox = append(r.outbox, wire.ReportMinute{Resource: k.resource, Time: time.UnixMilli(k.startMs).UTC(),
			Counts: wire.CountsOf(r.open[k]), BlockedBy: wire.BlocksOf(r.openBlocks[k])})
		delete(r.open, k)
		delete(r.openBlocks, k)
	}
	if over := len(r.outbox) - r.max; over > 0 {
		r.outbox = slices.Delete(r.outbox, 0, over)
		r.dropped += int64(over)
	}
}

// batch returns the oldest finished minutes, up to n. The caller holds
// cycle, so they stay at the front of the outbox until it removes them.
func (r *reporter) batch(n int) []wire.ReportMinute {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outbox[:min(n, len(r.outbox))]
}

// remove takes the n oldest minutes out of the outbox, counting them as
// dropped unless the server took them. The caller holds cycle.
func (r *reporter) remove(n int, dropped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outbox = slices.Delete(r.outbox, 0, n)
	if dropped {
		r.dropped += int64(n)
	}
}

// liveFigures returns the last second's figures of every resource of s
// with traffic or calls in flight, the busiest maxLivePerReport if there
// are more. The caller holds cycle.
func (r *reporter) liveFigures(s Stats) []wire.ReportLive {
	r.live = s.Live(r.live[:0])
	if len(r.live) > maxLivePerReport {
		slices.SortFunc(r.live, func(a, b wire.ReportLive) int {
			return cmp.Compare(b.PassQps+b.BlockQps+b.ShadowBlockQps, a.PassQps+a.BlockQps+a.ShadowBlockQps)
		})
		r.live = r.live[:maxLivePerReport]
	}
	return r.live
}

// reportLoop collects the engine's figures every ReportInterval and posts
// them, backing off after failures, until ctx ends. It collects on while
// the server is away, so that no minute leaves the engine's ring unread.
func (c *Client) reportLoop(ctx context.Context) {
	b := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	var retryAt time.Time
	tick := time.NewTicker(c.cfg.ReportInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := c.report(ctx, c.cfg.Now().After(retryAt), false)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			c.fail(err)
			retryAt = c.cfg.Now().Add(b.next())
		default:
			b.reset()
		}
	}
}

// flush collects every minute, the current one included, and posts until
// the outbox is empty or a post fails.
func (c *Client) flush(ctx context.Context) error {
	return c.report(ctx, true, true)
}

// report collects the engine's figures and, with send, posts a report;
// with all, every minute counts as finished and posts go on until the
// outbox is empty.
func (c *Client) report(ctx context.Context, send, all bool) error {
	r := c.reports
	r.cycle.Lock()
	defer r.cycle.Unlock()
	r.collect(c.stats, all)
	if !send {
		return nil
	}
	if err := c.postUnsent(ctx); err != nil {
		return err
	}
	for {
		if err := c.post(ctx); err != nil {
			return err
		}
		if buffered, _ := r.counts(); !all || buffered == 0 {
			return nil
		}
	}
}

// post sends one report: the oldest finished minutes and the live
// figures. The minutes leave the outbox once the server took them, or
// refused them as malformed (they would be refused again). The caller
// holds cycle.
func (c *Client) post(ctx context.Context) error {
	r := c.reports
	batch := r.batch(maxMinutesPerReport)
	refused, err := c.send(ctx, wire.Report{Instance: c.identity(), Minutes: batch, Live: r.liveFigures(c.stats), HotValues: hotValuesOf(c.stats)})
	switch {
	case refused:
		r.remove(len(batch), true)
		return fmt.Errorf("report refused, %d minutes dropped: %w", len(batch), err)
	case err != nil:
		return err
	}
	r.remove(len(batch), false)
	c.mu.Lock()
	c.lastReport, c.credentialsRefused = c.cfg.Now(), false
	c.mu.Unlock()
	return nil
}

// postUnsent reports the minutes that earlier Clients on the cache
// directory could not, as the instances that counted them, and removes
// each file once the server took (or refused) all of its minutes. The
// caller holds cycle.
func (c *Client) postUnsent(ctx context.Context) error {
	r := c.reports
	for path, u := range r.unsent {
		for len(u.Minutes) > 0 {
			n := min(len(u.Minutes), maxMinutesPerReport)
			refused, err := c.send(ctx, wire.Report{Instance: u.Instance, Minutes: u.Minutes[:n], Live: []wire.ReportLive{}})
			if refused {
				r.mu.Lock()
				r.dropped += int64(n)
				r.mu.Unlock()
			} else if err != nil {
				r.unsent[path] = u
				return fmt.Errorf("unsent minutes of %s: %w", u.Instance.ID, err)
			}
			u.Minutes = u.Minutes[n:]
		}
		delete(r.unsent, path)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// send posts rep. refused is true when the server refused it as
// malformed: sent again, it would be refused again. The caller holds
// cycle.
func (c *Client) send(ctx context.Context, rep wire.Report) (refused bool, err error) {
	r := c.reports
	if err := c.encode(rep); err != nil {
		return false, fmt.Errorf("report: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.reportURL, bytes.NewReader(r.body.Bytes()))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	c.authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return false, fmt.Errorf("report: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent:
		_, _ = io.Copy(io.Discard, resp.Body)
		return false, nil
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true, answerError(resp)
	default:
		return false, fmt.Errorf("report: %w", answerError(resp))
	}
}

// encode writes rep to the reporter's body. The caller holds cycle.
func (c *Client) encode(rep wire.Report) error {
	r := c.reports
	r.body.Reset()
	return json.NewEncoder(&r.body).Encode(rep)
}

// identity is who this Client reports as.
func (c *Client) identity() wire.ReportInstance {
	c.mu.Lock()
	revision := c.revision
	c.mu.Unlock()
	return wire.ReportInstance{
		ID: c.cfg.InstanceID, App: c.cfg.App, Hostname: c.hostname, PID: c.pid,
		Version: c.cfg.Version, RulesRevision: revision,
	}
}
