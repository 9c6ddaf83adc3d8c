package rls

import (
	"context"
	"math"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/descriptor"
)

// service answers ShouldRateLimit on the engine.
type service struct {
	ratelimitv3.UnimplementedRateLimitServiceServer
	engine    *engine.Engine
	index     *index
	overrides *overrides
}

// ShouldRateLimit judges each descriptor on its own (docs/envoy.md,
// "Resolution"); the answer is OVER_LIMIT when any is. A bad request is
// refused whole before anything is counted.
func (s *service) ShouldRateLimit(ctx context.Context, req *ratelimitv3.RateLimitRequest) (*ratelimitv3.RateLimitResponse, error) {
	calls, err := validate(req)
	if err != nil {
		return nil, err
	}
	domain, domains := req.GetDomain(), s.index.get(ctx)
	matches := make([]match, len(calls))
	var replaced map[string]bool // nil, read as empty, unless a rule replaces
	for i := range calls {
		matches[i], _ = domains.resolve(domain, calls[i].entries)
		if n := matches[i].node; n != nil && len(n.replaces) > 0 {
			if replaced == nil {
				replaced = map[string]bool{}
			}
			for _, name := range n.replaces {
				replaced[name] = true
			}
		}
	}
	resp := &ratelimitv3.RateLimitResponse{
		OverallCode: ratelimitv3.RateLimitResponse_OK,
		Statuses:    make([]*ratelimitv3.RateLimitResponse_DescriptorStatus, len(calls)),
	}
	for i := range calls {
		st := s.judge(domain, &calls[i], matches[i], replaced)
		if st.Code == ratelimitv3.RateLimitResponse_OVER_LIMIT {
			resp.OverallCode = st.Code
		}
		resp.Statuses[i] = st
	}
	return resp, nil
}

// judge decides one descriptor: on its node's resource and rules, on its
// limit override, or, matching no node, on the resource of its keys.
func (s *service) judge(domain string, c *call, m match, replaced map[string]bool) *ratelimitv3.RateLimitResponse_DescriptorStatus {
	var resource, value string
	opts := []engine.EntryOption{engine.WithCount(c.hits), engine.WithNoWait()}
	switch n := m.node; {
	case n != nil && anyOf(n.names, replaced):
		return &ratelimitv3.RateLimitResponse_DescriptorStatus{Code: ratelimitv3.RateLimitResponse_OK}
	case n != nil:
		resource = n.resource
		if len(m.values) > 0 {
			value = descriptor.ParamValue(m.values)
			opts = append(opts, engine.WithParam(descriptor.ParamKey(n.path), value))
		}
	default:
		keys := make([]descriptor.Entry, len(c.entries))
		for i, e := range c.entries {
			keys[i] = descriptor.Entry{Key: e.Key}
		}
		resource = descriptor.Resource(domain, keys)
		if c.override != nil {
			values := make([]string, len(c.entries))
			for i, e := range c.entries {
				values[i] = e.Value
			}
			value = descriptor.ParamValue(values)
		}
	}
	res := s.engine.Resource(resource)
	if o := c.override; o != nil {
		l := s.overrides.get(overrideKey{resource: resource, value: value, requests: o.requests, intervalMs: o.intervalMs})
		nowMs := s.engine.Clock().NowMs()
		passed := l.take(nowMs, c.hits)
		res.Tally(passed, c.hits)
		remaining, resetMs := l.status(nowMs, c.hits, !passed)
		return descriptorStatus(!passed, engine.Status{
			Limit: o.requests, IntervalMs: o.intervalMs, Remaining: remaining, ResetMs: resetMs, Known: true,
		})
	}
	// The RLS never learns when the calls end: they are released at once.
	e, blk := res.Entry(opts...)
	if blk == nil {
		e.Release()
	}
	st := res.Status(blk != nil, opts...)
	if !st.Known && blk == nil {
		// As envoyproxy/ratelimit answers for a shadow_mode limit: OK, with
		// the limit and what is left of it (0 once over).
		st = res.ShadowStatus(opts...)
	}
	return descriptorStatus(blk != nil, st)
}

// anyOf reports whether any of names is in set.
func anyOf(names []string, set map[string]bool) bool {
	for _, n := range names {
		if set[n] {
			return true
		}
	}
	return false
}

// descriptorStatus is the answer for a descriptor whose limit is st.
func descriptorStatus(blocked bool, st engine.Status) *ratelimitv3.RateLimitResponse_DescriptorStatus {
	ds := &ratelimitv3.RateLimitResponse_DescriptorStatus{Code: ratelimitv3.RateLimitResponse_OK}
	if blocked {
		ds.Code = ratelimitv3.RateLimitResponse_OVER_LIMIT
	}
	if !st.Known {
		return ds
	}
	ds.CurrentLimit = currentLimit(st.Rule, st.Limit, st.IntervalMs)
	ds.LimitRemaining = clampUint32(st.Remaining)
	ds.DurationUntilReset = durationpb.New(time.Duration(st.ResetMs) * time.Millisecond)
	return ds
}

// responseUnits are the units of current_limit, shortest first.
var responseUnits = []struct {
	unit ratelimitv3.RateLimitResponse_RateLimit_Unit
	ms   int64
}{
	{ratelimitv3.RateLimitResponse_RateLimit_SECOND, 1000},
	{ratelimitv3.RateLimitResponse_RateLimit_MINUTE, 60_000},
	{ratelimitv3.RateLimitResponse_RateLimit_HOUR, 3_600_000},
	{ratelimitv3.RateLimitResponse_RateLimit_DAY, 86_400_000},
}

// currentLimit states limit per intervalMs in Envoy's units: the unit of
// that length, else the shortest unit longer, with the limit scaled to it
// and rounded down (a day for any longer window).
func currentLimit(name string, limit, intervalMs int64) *ratelimitv3.RateLimitResponse_RateLimit {
	u := responseUnits[len(responseUnits)-1]
	for _, candidate := range responseUnits {
		if candidate.ms >= intervalMs {
			u = candidate
			break
		}
	}
	requests := limit
	if intervalMs > 0 && intervalMs != u.ms {
		requests = int64(math.Floor(float64(limit) * float64(u.ms) / float64(intervalMs)))
	}
	return &ratelimitv3.RateLimitResponse_RateLimit{Name: name, RequestsPerUnit: clampUint32(requests), Unit: u.unit}
}

func clampUint32(n int64) uint32 {
	return uint32(min(max(n, 0), math.MaxUint32))
}
