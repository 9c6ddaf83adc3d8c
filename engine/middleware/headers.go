package middleware

import (
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/engine"
)

// RateLimitHeaders is the style of the headers that tell a caller its
// limit, what remains of it and when its window has room again: none,
// the IETF httpapi draft's or Envoy's. Only a call whose resource has an
// enforced window rule gets them (engine.Status.Known); of several rules,
// they tell of the one with the fewest calls left.
type RateLimitHeaders int

const (
	// HeadersOff sends no rate-limit headers, and computes no status for
	// the calls that pass: the default.
	HeadersOff RateLimitHeaders = iota
	// HeadersDraft sends the RateLimit-Policy and RateLimit fields of
	// draft-ietf-httpapi-ratelimit-headers-11:
	//
	//	RateLimit-Policy: "default";q=100;w=60
	//	RateLimit: "default";r=42;t=17
	//
	// q is the rule's threshold per window of w seconds, r the calls that
	// still fit and t the seconds until the window has room for more.
	HeadersDraft
	// HeadersXRateLimit sends X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset as Envoy's rate limit filter writes them from a
	// rate limit service's answer:
	//
	//	X-RateLimit-Limit: 100, 100;w=60
	//	X-RateLimit-Remaining: 42
	//	X-RateLimit-Reset: 17
	HeadersXRateLimit
)

// String returns the style's name: "off", "draft" or "x-ratelimit".
func (s RateLimitHeaders) String() string {
	switch s {
	case HeadersOff:
		return "off"
	case HeadersDraft:
		return "draft"
	case HeadersXRateLimit:
		return "x-ratelimit"
	}
	return "RateLimitHeaders(" + strconv.Itoa(int(s)) + ")"
}

// ParseRateLimitHeaders returns the style String names.
func ParseRateLimitHeaders(name string) (RateLimitHeaders, error) {
	for _, s := range []RateLimitHeaders{HeadersOff, HeadersDraft, HeadersXRateLimit} {
		if s.String() == name {
			return s, nil
		}
	}
	return HeadersOff, fmt.Errorf("rate-limit headers %q: want off, draft or x-ratelimit", name)
}

// DefaultPolicy is the policy name of the draft's fields when they do not
// name the rule: end users have no business learning the rules.
const DefaultPolicy = "default"

// Header is one header field of an answer. Name is in the canonical form
// of net/http (http.CanonicalHeaderKey: "Ratelimit-Policy"), which
// net/http and Fiber send: header names are case-insensitive, and setting
// a canonical name costs no copy.
type Header struct {
	Name, Value string
}

// The rate-limit header names, canonical.
const (
	HeaderRateLimitPolicy     = "Ratelimit-Policy"
	HeaderRateLimit           = "Ratelimit"
	HeaderXRateLimitLimit     = "X-Ratelimit-Limit"
	HeaderXRateLimitRemaining = "X-Ratelimit-Remaining"
	HeaderXRateLimitReset     = "X-Ratelimit-Reset"
)

// AppendHeaders appends to dst the header fields of st in the style;
// none when it is off or st is not Known. policy names the limit in the
// draft's fields (DefaultPolicy, or the rule's name when callers may know
// it); rule names are tokens, which a structured-field string holds as
// they are. Windows and resets are in whole seconds, rounded up: a client
// that waits as long finds room, and a window shorter than a second is
// told as one.
func (s RateLimitHeaders) AppendHeaders(dst []Header, st engine.Status, policy string) []Header {
	if !st.Known || (s != HeadersDraft && s != HeadersXRateLimit) {
		return dst
	}
	limit, remaining := max(st.Limit, 0), max(st.Remaining, 0)
	window, reset := max(ceilSeconds(st.IntervalMs), 1), ceilSeconds(st.ResetMs)
	// Each value is built in scratch and copied once.
	var scratch [96]byte
	if s == HeadersDraft {
		b := append(scratch[:0], '"')
		b = append(b, policy...)
		b = append(b, `";q=`...)
		b = strconv.AppendInt(b, limit, 10)
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, window, 10)
		dst = append(dst, Header{HeaderRateLimitPolicy, string(b)})
		b = append(scratch[:0], '"')
		b = append(b, policy...)
		b = append(b, `";r=`...)
		b = strconv.AppendInt(b, remaining, 10)
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, reset, 10)
		return append(dst, Header{HeaderRateLimit, string(b)})
	}
	b := strconv.AppendInt(scratch[:0], limit, 10)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, limit, 10)
	b = append(b, ";w="...)
	b = strconv.AppendInt(b, window, 10)
	return append(dst,
		Header{HeaderXRateLimitLimit, string(b)},
		Header{HeaderXRateLimitRemaining, strconv.FormatInt(remaining, 10)},
		Header{HeaderXRateLimitReset, strconv.FormatInt(reset, 10)})
}

// RetryAfter is the Retry-After, in seconds, of the answer to a call blk
// blocked, given st, the call's status (Resource.Status(true, ...) with
// the call's options): the time until the rule's window has room for the
// call, rounded up to whole seconds and at least 1, when the block is a
// window rule's that st tells of. For another block (a circuit breaker,
// a concurrency, throttling, system or authority rule), the engine does
// not tell when a call would pass, and it is RetryAfterSeconds.
func RetryAfter(st engine.Status, blk *engine.BlockError) int64 {
	switch {
	case !st.Known || st.Rule != blk.Rule():
		return RetryAfterSeconds
	case blk.Reason() != engine.ReasonFlow && blk.Reason() != engine.ReasonHotspot:
		return RetryAfterSeconds
	}
	return max(ceilSeconds(st.ResetMs), 1)
}

// ceilSeconds is ms in whole seconds, rounded up; 0 for none.
func ceilSeconds(ms int64) int64 {
	if ms <= 0 {
		return 0
	}
	return (ms + 999) / 1000
}
