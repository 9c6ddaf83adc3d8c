package guard

import (
	"strconv"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware"
)

// Limits is what a guard tells callers of their limits: the style of its
// rate-limit headers, and whether they may name the rule.
type Limits struct {
	Style   middleware.RateLimitHeaders
	Details bool
}

// MaxHeaders is how many header fields a guard sets on an answer: three
// rate-limit headers and Retry-After.
const MaxHeaders = 4

// On reports whether a passed call's answer gets headers, which costs a
// search of the windows (Resource.Status): with the style off, a guard
// must not call Passed.
func (l Limits) On() bool { return l.Style != middleware.HeadersOff }

// Passed appends to dst the rate-limit headers of a call to res with opts
// that has just passed.
func (l Limits) Passed(dst []middleware.Header, res *engine.Resource, opts []engine.EntryOption) []middleware.Header {
	st := res.Status(false, opts...)
	return l.Style.AppendHeaders(dst, st, l.policy(st))
}

// Blocked appends to dst the headers of the answer to a call to res with
// opts that blk blocked: Retry-After, computed from the rule
// (middleware.RetryAfter), and the rate-limit headers.
func (l Limits) Blocked(dst []middleware.Header, res *engine.Resource, opts []engine.EntryOption, blk *engine.BlockError) []middleware.Header {
	st := res.Status(true, opts...)
	dst = append(dst, middleware.Header{Name: "Retry-After", Value: strconv.FormatInt(middleware.RetryAfter(st, blk), 10)})
	return l.Style.AppendHeaders(dst, st, l.policy(st))
}

// policy names the limit in the draft's fields: the rule, for callers
// that may know the rules (the guard's block details), as its block
// answer would.
func (l Limits) policy(st engine.Status) string {
	if l.Details && st.Rule != "" {
		return st.Rule
	}
	return middleware.DefaultPolicy
}
