package metrics

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/store"
)

// Bounds of the history and of the ranking (docs/api.md).
const (
	// MaxHistoryPoints is the most steps one history answer may span.
	MaxHistoryPoints = 10_000
	// DefaultHistorySteps is how many steps a history query that names
	// no start covers.
	DefaultHistorySteps = 60
	// DefaultTopRangeMs is the range of a ranking that names no start.
	DefaultTopRangeMs = store.HourMs
	// lastTimeMs is the end of year 9999, the last time RFC 3339 can
	// write: a history's end rounded up past it could not be answered.
	lastTimeMs = 253_402_300_799_999
)

// Step is a step of the history: its name in the API and its length.
// Steps are UTC-aligned.
type Step struct {
	Name string
	Ms   int64
}

// Steps are the steps of the history, smallest first.
var Steps = []Step{
	{"1m", store.MinuteMs},
	{"5m", 5 * store.MinuteMs},
	{"15m", 15 * store.MinuteMs},
	{"1h", store.HourMs},
	{"1d", 24 * store.HourMs},
}

// ParamError is a query the pipeline cannot answer, because of the
// parameter it names.
type ParamError struct {
	Param   string
	Message string
}

// Error is the parameter followed by what is wrong with it.
func (e *ParamError) Error() string { return e.Param + " " + e.Message }

// UnknownResourceError is a history asked of a resource never seen.
type UnknownResourceError struct {
	Name string
}

// Error says which resource.
func (e *UnknownResourceError) Error() string {
	return fmt.Sprintf("no resource %q was ever seen", e.Name)
}

// StepNamed returns the step called name, or a ParamError for step.
func StepNamed(name string) (Step, error) {
	names := make([]string, len(Steps))
	for i, s := range Steps {
		if s.Name == name {
			return s, nil
		}
		names[i] = s.Name
	}
	return Step{}, &ParamError{"step", "must be one of " + strings.Join(names, ", ")}
}

// History is one resource's traffic over a range, step by step.
type History struct {
	// FromMs and ToMs are the range answered, rounded out to the step.
	FromMs, ToMs int64
	// Points has one point per step with traffic, oldest first.
	Points []store.MetricPoint
	// CoveredMs are the starts of the steps, oldest first, in which a
	// server was up (a heartbeat, or this process's own run): a step
	// there without a point was idle; one elsewhere is unknown.
	CoveredMs []int64
}

// HistoryQuery is a history asked of the pipeline: one resource's traffic
// from FromMs (inclusive) to ToMs (exclusive), both rounded out to Step.
type HistoryQuery struct {
	Resource     string
	Step         Step
	FromMs, ToMs int64
	// Instance narrows the history to what one instance reported, by its
	// own id (GET /instances); "" answers the sum over the server's own
	// engine and every instance.
	Instance string
}

// History reads q's history. More than MaxHistoryPoints steps is a
// ParamError for step, and an end rounded up past year 9999 one for to; an
// instance that no instance's id is, an error wrapping store.ErrNotFound;
// a resource the resource list does not hold (known) an
// UnknownResourceError.
func (p *Pipeline) History(ctx context.Context, q HistoryQuery) (History, error) {
	step := q.Step
	if ceilMs(q.ToMs, step.Ms) > lastTimeMs {
		return History{}, &ParamError{"to", fmt.Sprintf("rounded up to the step (%s) passes 9999-12-31T23:59:59Z, the last time RFC 3339 can write: end the range by %s",
			step.Name, formatMs(floorMs(lastTimeMs, step.Ms)))}
	}
	fromMs, toMs := floorMs(q.FromMs, step.Ms), ceilMs(q.ToMs, step.Ms)
	if points := (toMs - fromMs) / step.Ms; points > MaxHistoryPoints {
		return History{}, &ParamError{"step", fmt.Sprintf("gives %d points from %s to %s, over the limit of %d: use a larger step or a shorter range",
			points, formatMs(fromMs), formatMs(toMs), MaxHistoryPoints)}
	}
	running := p.runningSteps(fromMs, toMs, step.Ms)
	rows, err := p.store.HistoryRows(ctx, store.HistoryQuery{
		Resource: q.Resource, Instance: q.Instance, FromMs: fromMs, ToMs: toMs, StepMs: step.Ms,
	})
	if err != nil {
		return History{}, err
	}
	// The catalogue is read before the tallies, and a tally is dropped only
	// once its figures are stored and the engine has evicted its resource
	// as idle: a resource missing from both reads is unknown, unless its
	// figures waited out the engine's idle TTL unflushed and were stored in
	// between.
	if !rows.Catalogued && !p.collected(q.Resource) {
		return History{}, &UnknownResourceError{Name: q.Resource}
	}
	covered := slices.Compact(slices.Sorted(slices.Values(append(rows.CoveredMs, running...))))
	return History{FromMs: fromMs, ToMs: toMs, Points: rows.Points, CoveredMs: covered}, nil
}

// runningSteps returns the steps from fromMs to toMs, oldest first, of this
// process's run, whose latest minutes no flush has written yet: the server
// was up in them, stored heartbeat or not. They need no read, so they are
// known before the store's covered steps.
func (p *Pipeline) runningSteps(fromMs, toMs, stepMs int64) []int64 {
	var steps []int64
	for s := max(fromMs, floorMs(p.startMs, stepMs)); s < toMs && s <= p.NowMs(); s += stepMs {
		steps = append(steps, s)
	}
	return steps
}

// Top ranks the resources by their stored traffic from fromMs (inclusive)
// to toMs (exclusive), highest first, and returns the first limit.
func (p *Pipeline) Top(ctx context.Context, fromMs, toMs int64, by store.TopBy, limit int) ([]store.ResourceTotals, error) {
	return p.store.TopResources(ctx, fromMs, toMs, by, limit)
}

func formatMs(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }
