package instances

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/store"
)

// Defaults of the instances' states (docs/api.md).
const (
	// DefaultStaleAfter is how long without a report makes an instance
	// stale.
	DefaultStaleAfter = 10 * time.Second
	// DefaultGoneAfter is how long without a report makes it gone.
	DefaultGoneAfter = 5 * time.Minute
	// DefaultMaxInstances is how many instances, by default, may have
	// reported within DefaultGoneAfter: past it, a new id is refused
	// until some are gone.
	DefaultMaxInstances = 10_000
	// persistEvery is how stale the stored last report of an instance may
	// grow before a report writes it again: a restart loses at most this
	// much of it.
	persistEvery = 5 * time.Second
)

// The states of an instance.
const (
	StateLive  = "live"
	StateStale = "stale"
	StateGone  = "gone"
)

// Info is what an instance says of itself in each report.
type Info struct {
	// ID is the instance's own id, unique in the fleet.
	ID            string
	App           string
	Hostname      string
	PID           int64
	Version       string
	RulesRevision int64
}

// Instance is an instance as the registry lists it.
type Instance struct {
	Info
	FirstSeen, LastSeen time.Time
	// State is StateLive, StateStale or StateGone.
	State string
}

// Options configures a Registry.
type Options struct {
	// Store keeps the registry. Required.
	Store *store.Store
	// Now tells the time of reports and states. Optional. Default:
	// time.Now.
	Now func() time.Time
	// StaleAfter and GoneAfter are how long without a report makes an
	// instance stale and gone. Optional. Defaults: DefaultStaleAfter and
	// DefaultGoneAfter.
	StaleAfter, GoneAfter time.Duration
	// MaxInstances bounds the instances not gone, so that a holder of an
	// instance token cannot grow the registry (memory and rows) without
	// end by inventing ids. Optional. Default: DefaultMaxInstances.
	MaxInstances int
	// Logger tells of an instance's record that could not be written
	// behind its report (Report). Optional. Default: discarded.
	Logger *slog.Logger
}

// ErrTooManyInstances is returned by Report for a new id while
// MaxInstances instances that are not gone have reported.
var ErrTooManyInstances = errors.New("instances: too many instances report")

// Registry is the instances registry; it is safe for concurrent use.
type Registry struct {
	store                 *store.Store
	logger                *slog.Logger
	now                   func() time.Time
	staleAfter, goneAfter time.Duration
	maxInstances          int

	mu sync.Mutex
	// reported holds, by id, the instances that reported since the
	// server started, as last reported, with the last report stored.
	reported map[string]*reported
	// writing counts, by id, the reports of instances not in reported
	// whose write to the store is under way.
	writing     map[string]int
	lastSweepMs int64
	// elsewhere caches, by id, the store's last report of instances that
	// did not report here (to another replica, or never), for Reporting.
	elsewhere map[string]storedReport
	// behind counts the writes that run behind the reports of known
	// instances (refresh), for Wait.
	behind sync.WaitGroup
}

// storedReport is an instance's last report as the store held it at
// readMs; lastSeenMs is 0 for an id the store lacks.
type storedReport struct {
	lastSeenMs, readMs int64
}

// reported is an instance's last report and what the store holds of it.
type reported struct {
	row              store.Instance
	storedLastSeenMs int64
	// unstored is set while the store may lack the fields of row (a
	// report changed them), writing while a write behind the reports runs
	// (refresh).
	unstored, writing bool
}

// New returns the registry of opts' store.
func New(opts Options) *Registry {
	r := &Registry{
		store: opts.Store, now: opts.Now, logger: opts.Logger,
		staleAfter:   cmp.Or(opts.StaleAfter, DefaultStaleAfter),
		goneAfter:    cmp.Or(opts.GoneAfter, DefaultGoneAfter),
		maxInstances: cmp.Or(opts.MaxInstances, DefaultMaxInstances),
		reported:     map[string]*reported{},
		writing:      map[string]int{},
		elsewhere:    map[string]storedReport{},
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	return r
}

// Report records that the instance info describes reported now, and
// returns its key in the store (the key of its metric rows).
//
// The store is written without mu held, so that reports wait neither for
// the write nor for one another's: writes that meet are committed together
// (store.PutInstance). A new id being written counts towards MaxInstances
// meanwhile, so that concurrent new ids cannot overshoot it. Only a new
// id's report waits for its write, for the key; a known instance's
// record, rewritten every persistEvery or when its fields change, is
// written behind its report (refresh), since a fleet's records would
// otherwise make a fifth of its reports wait for the database's one
// writer, behind the minutes' transactions.
func (r *Registry) Report(ctx context.Context, info Info) (int64, error) {
	nowMs := r.now().UnixMilli()
	r.mu.Lock()
	r.sweepLocked(nowMs, false)
	last, known := r.reported[info.ID]
	isNew := !known && r.writing[info.ID] == 0
	if isNew && len(r.reported)+len(r.writing) >= r.maxInstances {
		if r.sweepLocked(nowMs, true); len(r.reported)+len(r.writing) >= r.maxInstances {
			n := len(r.reported) + len(r.writing)
			r.mu.Unlock()
			return 0, fmt.Errorf("%w: %d have reported in the last %v", ErrTooManyInstances, n, r.goneAfter)
		}
	}
	if known {
		if last.row.App != info.App || last.row.Hostname != info.Hostname || last.row.PID != info.PID ||
			last.row.Version != info.Version || last.row.RulesRevision != info.RulesRevision {
			last.row.App, last.row.Hostname, last.row.PID = info.App, info.Hostname, info.PID
			last.row.Version, last.row.RulesRevision = info.Version, info.RulesRevision
			last.unstored = true
		}
		last.row.LastSeenMs = max(last.row.LastSeenMs, nowMs)
		if (last.unstored || nowMs-last.storedLastSeenMs >= persistEvery.Milliseconds()) && !last.writing {
			last.writing = true
			r.behind.Go(func() { r.refresh(context.WithoutCancel(ctx), last) })
		}
		id := last.row.ID
		r.mu.Unlock()
		return id, nil
	}
	r.writing[info.ID]++
	r.mu.Unlock()
	row := store.Instance{
		UID: info.ID, App: info.App, Hostname: info.Hostname, PID: info.PID, Version: info.Version,
		RulesRevision: info.RulesRevision, FirstSeenMs: nowMs, LastSeenMs: nowMs,
	}
	err := r.store.PutInstance(ctx, &row)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.writing[info.ID]--; r.writing[info.ID] == 0 {
		delete(r.writing, info.ID)
	}
	if err != nil {
		return 0, err
	}
	// Of two writes of a new id, the later report's stays; a report that
	// wrote nothing meanwhile moved its last seen time.
	cur, ok := r.reported[info.ID]
	if ok {
		row.LastSeenMs = max(row.LastSeenMs, cur.row.LastSeenMs)
	}
	if !ok || cur.storedLastSeenMs <= nowMs && !cur.writing {
		r.reported[info.ID] = &reported{row: row, storedLastSeenMs: nowMs}
	}
	return row.ID, nil
}

// refresh writes last's record as reported, again while reports change
// its fields meanwhile. A failed write is logged and left to the next
// report, which finds the record unstored or its last seen time stored
// too long ago: the report it ran behind was answered already.
func (r *Registry) refresh(ctx context.Context, last *reported) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		row := last.row
		last.unstored = false
		r.mu.Unlock()
		err := r.store.PutInstance(ctx, &row)
		r.mu.Lock()
		if err != nil {
			r.logger.Warn("instances: an instance's record was not written; its next report tries again",
				"instance", row.UID, "err", err)
			last.unstored = true
			break
		}
		last.storedLastSeenMs = max(last.storedLastSeenMs, row.LastSeenMs)
		if !last.unstored {
			break
		}
	}
	last.writing = false
}

// Wait returns once the writes behind the reports that returned before
// it have ended, so that the store holds what they reported: before the
// store is closed.
func (r *Registry) Wait() {
	r.behind.Wait()
}

// sweepLocked forgets, once per goneAfter unless now, the instances gone:
// the store lists them, with a last report at most persistEvery older
// than their last. The caller holds mu.
func (r *Registry) sweepLocked(nowMs int64, now bool) {
	if !now && nowMs-r.lastSweepMs < r.goneAfter.Milliseconds() {
		return
	}
	r.lastSweepMs = nowMs
	for id, last := range r.reported {
		if nowMs-last.row.LastSeenMs >= r.goneAfter.Milliseconds() {
			delete(r.reported, id)
		}
	}
}

// Reporting reports whether the instance id is live: whether it reported
// within StaleAfter, here or, through a shared database, to another
// replica, whose last report the store holds up to persistEvery late. The
// store is read only for an id not live here, at most once a second an id,
// and what it said is kept for at most MaxInstances ids, so that callers
// naming ids without end cost neither memory nor a read per call.
func (r *Registry) Reporting(ctx context.Context, id string) (bool, error) {
	nowMs := r.now().UnixMilli()
	r.mu.Lock()
	var hereMs int64
	if last, ok := r.reported[id]; ok {
		hereMs = last.row.LastSeenMs
	}
	cached, ok := r.elsewhere[id]
	r.mu.Unlock()
	if nowMs-hereMs < r.staleAfter.Milliseconds() {
		return true, nil
	}
	if !ok || nowMs-cached.readMs >= time.Second.Milliseconds() {
		cached = storedReport{readMs: nowMs}
		row, err := r.store.InstanceByUID(ctx, id)
		switch {
		case err == nil:
			cached.lastSeenMs = row.LastSeenMs
		case !errors.Is(err, store.ErrNotFound):
			return false, err
		}
		r.mu.Lock()
		if len(r.elsewhere) >= r.maxInstances {
			clear(r.elsewhere)
		}
		r.elsewhere[id] = cached
		r.mu.Unlock()
	}
	// Only a report stored after this registry's last is another
	// replica's.
	return cached.lastSeenMs > hereMs && nowMs-cached.lastSeenMs < (r.staleAfter+persistEvery).Milliseconds(), nil
}

// List returns the instances, by id, with their states; with app set,
// only that app's.
func (r *Registry) List(ctx context.Context, app string) ([]Instance, error) {
	rows, err := r.store.Instances(ctx, app)
	if err != nil {
		return nil, err
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Instance, len(rows))
	for i, row := range rows {
		// The last report here, if no other replica's is stored since,
		// is the newest: its write may still be under way (refresh).
		if last, ok := r.reported[row.UID]; ok && last.row.LastSeenMs >= row.LastSeenMs {
			firstSeenMs := row.FirstSeenMs
			row = last.row
			row.FirstSeenMs = min(row.FirstSeenMs, firstSeenMs)
		}
		out[i] = r.instance(row, now)
	}
	return out, nil
}

// instance is row as listed at now.
func (r *Registry) instance(row store.Instance, now time.Time) Instance {
	lastSeen := time.UnixMilli(row.LastSeenMs).UTC()
	state := StateLive
	switch silent := now.Sub(lastSeen); {
	case silent >= r.goneAfter:
		state = StateGone
	case silent >= r.staleAfter:
		state = StateStale
	}
	return Instance{
		Info: Info{
			ID: row.UID, App: row.App, Hostname: row.Hostname, PID: row.PID, Version: row.Version,
			RulesRevision: row.RulesRevision,
		},
		FirstSeen: time.UnixMilli(row.FirstSeenMs).UTC(), LastSeen: lastSeen, State: state,
	}
}
