package rls

import (
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

func TestCurrentLimitUnits(t *testing.T) {
	cases := []struct {
		limit, intervalMs int64
		want              uint32
		unit              ratelimitv3.RateLimitResponse_RateLimit_Unit
	}{
		{10, 1000, 10, ratelimitv3.RateLimitResponse_RateLimit_SECOND},
		{600, 60_000, 600, ratelimitv3.RateLimitResponse_RateLimit_MINUTE},
		{1000, 3_600_000, 1000, ratelimitv3.RateLimitResponse_RateLimit_HOUR},
		{10_000, 86_400_000, 10_000, ratelimitv3.RateLimitResponse_RateLimit_DAY},
		// Other windows: the next unit up, the rate kept, rounded down.
		{10, 500, 20, ratelimitv3.RateLimitResponse_RateLimit_SECOND},
		{10, 2000, 300, ratelimitv3.RateLimitResponse_RateLimit_MINUTE},
		{7, 90_000, 280, ratelimitv3.RateLimitResponse_RateLimit_HOUR},
		{7, 7_000_000, 86, ratelimitv3.RateLimitResponse_RateLimit_DAY},
	}
	for _, c := range cases {
		got := currentLimit("r", c.limit, c.intervalMs)
		if got.GetRequestsPerUnit() != c.want || got.GetUnit() != c.unit || got.GetName() != "r" {
			t.Errorf("%d per %d ms: %v, want %d per %v", c.limit, c.intervalMs, got, c.want, c.unit)
		}
	}
}

func TestOverridesForgetTheLeastRecentlyUsed(t *testing.T) {
	o := newOverrides(2)
	a, b := overrideKey{resource: "a", requests: 1, intervalMs: 1000}, overrideKey{resource: "b", requests: 1, intervalMs: 1000}
	la := o.get(a)
	if !la.take(0, 1) {
		t.Fatal("a's first call refused")
	}
	o.get(b)
	if o.get(a) != la {
		t.Fatal("a was forgotten while the LRU had room")
	}
	o.get(overrideKey{resource: "c", requests: 1, intervalMs: 1000}) // b goes: a was used last
	if o.get(a) != la || o.order.Len() != 2 {
		t.Fatalf("a forgotten, or %d held", o.order.Len())
	}
	if newLimiter(0, 1000).take(0, 1) {
		t.Fatal("a limit of 0 passed a call")
	}
}
