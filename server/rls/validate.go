package rls

import (
	"fmt"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/descriptor"
)

// Bounds of a request (docs/envoy.md, "Bounds").
const (
	// MaxDescriptors bounds the descriptors of a request: Envoy sends one
	// per rate_limits action list that applies, a handful.
	MaxDescriptors = 64
	// MaxEntries bounds the entries of a descriptor.
	MaxEntries = 16
	// MaxEntryLen bounds an entry's key and value, in bytes, as the check
	// API bounds a parameter's value.
	MaxEntryLen = engine.MaxResourceNameLen
	// MaxHits bounds hits_addend, the check API's count bound times a
	// thousand: a body's bytes, say.
	MaxHits = 1_000_000_000
	// MaxRecvMsgBytes bounds a request message.
	MaxRecvMsgBytes = 64 << 10
)

// call is one descriptor of a request once validated: its entries, its
// count and its limit override, if any.
type call struct {
	entries  []descriptor.Entry
	hits     int64
	override *override
}

// override is a descriptor's own limit: requests per unit.
type override struct {
	requests   int64
	intervalMs int64
}

// unitMs are the lengths of the units a limit override may give, and of
// the units of current_limit.
var unitMs = map[typev3.RateLimitUnit]int64{
	typev3.RateLimitUnit_SECOND: 1000,
	typev3.RateLimitUnit_MINUTE: 60_000,
	typev3.RateLimitUnit_HOUR:   3_600_000,
	typev3.RateLimitUnit_DAY:    86_400_000,
}

// validate checks the whole request, so that a bad one counts nothing, and
// returns its calls; the error is InvalidArgument naming the field.
func validate(req *ratelimitv3.RateLimitRequest) ([]call, error) {
	domain := req.GetDomain()
	switch {
	case domain == "":
		return nil, invalid("domain", "is required")
	case len(domain) > MaxEntryLen:
		return nil, invalid("domain", fmt.Sprintf("must be at most %d bytes", MaxEntryLen))
	case len(req.GetDescriptors()) == 0:
		return nil, invalid("descriptors", "at least one descriptor is required")
	case len(req.GetDescriptors()) > MaxDescriptors:
		return nil, invalid("descriptors", fmt.Sprintf("at most %d descriptors, got %d", MaxDescriptors, len(req.GetDescriptors())))
	case req.GetHitsAddend() > MaxHits:
		return nil, invalid("hits_addend", fmt.Sprintf("must be at most %d", MaxHits))
	}
	hits := max(int64(req.GetHitsAddend()), 1)
	calls := make([]call, len(req.GetDescriptors()))
	for i, d := range req.GetDescriptors() {
		// Named only for an error: a good request formats nothing.
		field := func(rest string) string { return fmt.Sprintf("descriptors[%d]%s", i, rest) }
		c := &calls[i]
		c.hits = hits
		if h := d.GetHitsAddend(); h != nil {
			if h.GetValue() > MaxHits {
				return nil, invalid(field(".hits_addend"), fmt.Sprintf("must be at most %d", MaxHits))
			}
			c.hits = max(int64(h.GetValue()), 1)
		}
		if d.GetIsNegativeHits() {
			return nil, invalid(field(".is_negative_hits"), "is not supported: passes counted are not taken back")
		}
		switch n := len(d.GetEntries()); {
		case n == 0:
			return nil, invalid(field(".entries"), "at least one entry is required")
		case n > MaxEntries:
			return nil, invalid(field(".entries"), fmt.Sprintf("at most %d entries, got %d", MaxEntries, n))
		}
		c.entries = make([]descriptor.Entry, len(d.GetEntries()))
		keys := make([]descriptor.Entry, len(d.GetEntries()))
		for j, e := range d.GetEntries() {
			entry := func(rest string) string { return field(fmt.Sprintf(".entries[%d]%s", j, rest)) }
			switch {
			case e.GetKey() == "":
				return nil, invalid(entry(".key"), "is required")
			case len(e.GetKey()) > MaxEntryLen:
				return nil, invalid(entry(".key"), fmt.Sprintf("must be at most %d bytes", MaxEntryLen))
			case len(e.GetValue()) > MaxEntryLen:
				return nil, invalid(entry(".value"), fmt.Sprintf("must be at most %d bytes", MaxEntryLen))
			}
			c.entries[j] = descriptor.Entry{Key: e.GetKey(), Value: e.GetValue()}
			keys[j] = descriptor.Entry{Key: e.GetKey()}
		}
		// A descriptor that matches no node is counted under its keys,
		// which must make a resource name the engine takes.
		if p := engine.ValidateResourceName(descriptor.Resource(domain, keys)); p != "" {
			return nil, invalid(field(".entries"), "the domain and keys make a resource name that "+p)
		}
		if l := d.GetLimit(); l != nil {
			ms, ok := unitMs[l.GetUnit()]
			if !ok {
				return nil, invalid(field(".limit.unit"), "must be SECOND, MINUTE, HOUR or DAY")
			}
			c.override = &override{requests: int64(l.GetRequestsPerUnit()), intervalMs: ms}
		}
	}
	return calls, nil
}

// invalid is the InvalidArgument status naming field.
func invalid(field, message string) error {
	return status.Error(codes.InvalidArgument, field+": "+message)
}
