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
	// InstanceID narrows the history to what one instance reported, by
	// its registry key; 0 answers the sum over the server's own engine
	// and every instance.
	InstanceID int64
}

// History reads q's history. More than MaxHistoryPoints steps is a
// ParamError for step, and an end rounded up past year 9999 one for to; a
// resource the resource list does not hold (known) is an
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
	rows, err := p.store.HistoryRows(ctx, store.HistoryQuery{
		Resource: q.Resource, InstanceID: q.InstanceID, FromMs: fromMs, ToMs: toMs, StepMs: step.Ms,
	})
	if err != nil {
		return History{}, err
	}
	h := History{FromMs: fromMs, ToMs: toMs, Points: rows.Points, CoveredMs: p.withRunning(rows.CoveredMs, fromMs, toMs, step.Ms)}
	if len(h.Points) == 0 {
		if err := p.known(ctx, q.Resource); err != nil {
			return History{}, err
		}
	}
	return h, nil
}

// withRunning returns the steps from fromMs to toMs in which a server was
// up, oldest first: stored, those with a stored heartbeat, and those of
// this process's run, whose latest minutes no flush has written yet.
func (p *Pipeline) withRunning(stored []int64, fromMs, toMs, stepMs int64) []int64 {
	for s := max(fromMs, floorMs(p.startMs, stepMs)); s < toMs && s <= p.NowMs(); s += stepMs {
		stored = append(stored, s)
	}
	return slices.Compact(slices.Sorted(slices.Values(stored)))
}

// known returns an UnknownResourceError unless the resource is one the
// resource list holds: in the catalogue (it had stored traffic or a rule
// names it) or with figures collected from the engine or an instance.
// That the engine tracks it is not enough: the engine keeps a resource a
// deleted rule named, though it never had traffic.
func (p *Pipeline) known(ctx context.Context, name string) error {
	return p.readStore(func() error {
		// No flush commits meanwhile, so the tallies, which need no read,
		// may be asked first.
		if len(p.seen([]string{name})) > 0 {
			return nil
		}
		entries, err := p.store.CatalogueEntries(ctx, []string{name})
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			return &UnknownResourceError{Name: name}
		}
		return nil
	})
}

// Top ranks the resources by their stored traffic from fromMs (inclusive)
// to toMs (exclusive), highest first, and returns the first limit.
func (p *Pipeline) Top(ctx context.Context, fromMs, toMs int64, by store.TopBy, limit int) ([]store.ResourceTotals, error) {
	return p.store.TopResources(ctx, fromMs, toMs, by, limit)
}

func formatMs(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }
