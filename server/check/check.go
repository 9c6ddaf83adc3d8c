package check

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/codec"
)

// API is the check API short of HTTP: each method takes a request's body
// and answers its JSON, or an error of this package's (or the engine's),
// which the server maps to a status.
type API struct {
	engine  *engine.Engine
	entries *Entries
	names   nameCache
}

// New returns an API that asks e and holds in entries the entries that
// must be completed.
func New(e *engine.Engine, entries *Entries) *API {
	return &API{engine: e, entries: entries}
}

// decision is the engine's answer to one check, as the server's
// CheckResult shows it.
type decision struct {
	allowed bool
	waitMs  int64
	reason  string
	rule    string
	entryID string
	// limit is the calls in flight an adaptive concurrency rule that
	// blocked the call allowed, which the answer gives in place of a
	// window's figures; 0 for other blocks.
	limit int64
	// status is the limit the call came nearest to, read after the
	// decision.
	status engine.Status
}

// Check decodes the body of POST /check, decides it and appends the
// answer's JSON to dst. It returns the status of the limit the call came
// nearest to too, for the answer's rate-limit headers.
func (a *API) Check(dst, body []byte) ([]byte, engine.Status, error) {
	q, err := decodeCheck(body, &a.names)
	if err != nil {
		return nil, engine.Status{}, err
	}
	d := a.decide(q)
	return d.appendJSON(dst), d.status, nil
}

// batchQueries keeps the decoded checks of a batch between batches: a
// hundred are 7 KiB, made and cleared on every batch otherwise.
var batchQueries = sync.Pool{New: func() any { return new([]checkQuery) }}

// Batch decodes the body of POST /check/batch, decides its checks one
// after the other, and appends to dst the JSON of their results in the
// same order; nothing is checked when any check is invalid.
func (a *API) Batch(dst, body []byte) ([]byte, error) {
	scratch := batchQueries.Get().(*[]checkQuery)
	queries, err := decodeBatch(body, &a.names, *scratch)
	defer func() {
		if cap(queries) > cap(*scratch) {
			*scratch = queries
		}
		// Cleared whole (a batch refused half-way filled some), so that
		// the pool holds no params of past checks.
		clear((*scratch)[:cap(*scratch)])
		*scratch = (*scratch)[:0]
		batchQueries.Put(scratch)
	}()
	if err != nil {
		return nil, err
	}
	b := slices.Grow(dst, 16+48*len(queries))
	b = append(b, `{"results":[`...)
	for i, q := range queries {
		if i > 0 {
			b = append(b, ',')
		}
		b = a.decide(q).appendJSON(b)
	}
	return append(b, "]}"...), nil
}

// decide asks the engine, which must not sleep: a throttled caller is told
// how long to wait instead. The entry is released at once unless a
// concurrency rule counts it or a circuit breaker waits for it as a probe;
// then it is held until complete. The options stay on the stack: passing
// origin, params and priority allocates nothing, and a check with few
// params does not clear room for the most a check may have.
func (a *API) decide(q checkQuery) decision {
	if len(q.params) <= fewCheckParams {
		var opts [4 + fewCheckParams]engine.EntryOption
		return a.decideWith(q, opts[:0])
	}
	var opts [4 + maxCheckParams]engine.EntryOption
	return a.decideWith(q, opts[:0])
}

// fewCheckParams is how many params a check may have for decide's
// smaller room of options.
const fewCheckParams = 3

// decideWith is decide, with opts, empty, room for the check's options.
func (a *API) decideWith(q checkQuery, opts []engine.EntryOption) decision {
	res := a.engine.Resource(q.resource)
	opts = append(opts, engine.WithCount(q.count), engine.WithNoWait())
	if q.origin != "" {
		opts = append(opts, engine.WithOrigin(q.origin))
	}
	if q.prioritized {
		opts = append(opts, engine.WithPrioritized())
	}
	for _, p := range q.params {
		opts = append(opts, engine.WithParam(p.key, p.value))
	}
	e, blk := res.Entry(opts...)
	if blk != nil {
		return decision{reason: string(blk.Reason()), rule: blk.Rule(), limit: blk.Limit(), status: res.Status(true, opts...)}
	}
	r := decision{allowed: true, waitMs: e.WaitMs(), status: res.Status(false, opts...)}
	if e.NeedsExit() {
		r.entryID = a.entries.hold(q.resource, q.count, e)
	} else {
		e.Release()
	}
	return r
}

// appendJSON appends the decision as encoding/json writes the server's
// CheckResult.
func (r decision) appendJSON(b []byte) []byte {
	if r.allowed {
		b = append(b, `{"allowed":true,"waitMs":`...)
	} else {
		b = append(b, `{"allowed":false,"waitMs":`...)
	}
	b = strconv.AppendInt(b, r.waitMs, 10)
	if r.reason != "" {
		b = append(b, `,"reason":`...)
		b = codec.AppendString(b, r.reason)
	}
	if r.rule != "" {
		b = append(b, `,"rule":`...)
		b = codec.AppendString(b, r.rule)
	}
	if r.entryID != "" {
		b = append(b, `,"entryId":`...)
		b = codec.AppendString(b, r.entryID)
	}
	if r.limit > 0 {
		b = append(b, `,"limit":`...)
		return append(strconv.AppendInt(b, r.limit, 10), '}')
	}
	if st := r.status; st.Known {
		b = append(b, `,"limit":`...)
		b = strconv.AppendInt(b, st.Limit, 10)
		b = append(b, `,"intervalMs":`...)
		b = strconv.AppendInt(b, st.IntervalMs, 10)
		b = append(b, `,"remaining":`...)
		b = strconv.AppendInt(b, max(st.Remaining, 0), 10)
		b = append(b, `,"resetMs":`...)
		b = strconv.AppendInt(b, st.ResetMs, 10)
	}
	return append(b, '}')
}

// Complete decodes the body of POST /complete and ends the calls it
// reports: the entry it names, the oldest probe held for its resource, or
// plain figures of the resource.
func (a *API) Complete(body []byte) error {
	q, err := decodeComplete(body)
	if err != nil {
		return err
	}
	if q.entryID == "" {
		probe, ok, err := a.entries.claim(q.resource)
		switch {
		case err != nil:
			return err
		case ok:
			probe.entry.Exit(append(q.exitOptions(), engine.WithCompleteCount(q.count))...)
		default:
			a.engine.Resource(q.resource).RecordComplete(q.count, q.rtMs, q.failed)
		}
		return nil
	}
	held, err := a.entries.take(q.entryID, func(held heldEntry) error {
		var errs []engine.FieldError
		if q.resource != "" && q.resource != held.resource {
			errs = append(errs, field("resource", fmt.Sprintf("is %q for this entry", held.resource)))
		}
		if q.hasCount && q.count != held.count {
			errs = append(errs, field("count", fmt.Sprintf("is %d for this entry", held.count)))
		}
		if len(errs) > 0 {
			return invalid("the body does not match the entry; see details", errs...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	held.entry.Exit(q.exitOptions()...)
	return nil
}

// exitOptions are the options that end an entry with q's outcome.
func (q completeQuery) exitOptions() []engine.ExitOption {
	opts := make([]engine.ExitOption, 0, 3)
	if q.failed {
		opts = append(opts, engine.WithError(errCallFailed))
	}
	if q.hasRt {
		opts = append(opts, engine.WithRtMs(q.rtMs))
	}
	return opts
}
