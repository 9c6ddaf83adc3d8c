package guard

import (
	"net/netip"
	"testing"

	"github.com/sluicehq/sluice/engine"
)

// countingRequest answers every read with a fixed value and counts the
// reads of its address.
type countingRequest struct{ ipReads *int }

func (countingRequest) Header(string) string                  { return "" }
func (countingRequest) HeaderLine(string, int) (string, bool) { return "", false }
func (countingRequest) Query(string) string                   { return "" }
func (countingRequest) PathParam(string) string               { return "" }
func (countingRequest) Cookie(string) string                  { return "" }
func (countingRequest) RemoteIP() netip.Addr                  { return netip.MustParseAddr("192.0.2.7") }
func (r countingRequest) RemoteIPText() string {
	*r.ipReads++
	return "192.0.2.7"
}

// TestAppendOnlyWhenARuleReads: a call of a resource no rule of which
// reads params or the origin computes neither; a hotspot or an authority
// rule loaded on it has them computed from the next call on.
func TestAppendOnlyWhenARuleReads(t *testing.T) {
	var x Extractors[countingRequest]
	x.SetOrigin(Func("who", func(countingRequest) string { return "alice" }))
	x.AddParam(ClientIP[countingRequest]())
	for _, tc := range []struct {
		name  string
		load  func(e *engine.Engine) error
		wants int // options appended
	}{
		{"no rule", func(*engine.Engine) error { return nil }, 0},
		{"a flow rule", func(e *engine.Engine) error {
			return e.LoadFlowRules([]engine.FlowRule{{Name: "f", Resource: "r", Threshold: 10}})
		}, 0},
		{"a hotspot rule", func(e *engine.Engine) error {
			return e.LoadHotspotRules([]engine.HotspotRule{{Name: "h", Resource: "r", ParamKey: IPKey, Threshold: 10}})
		}, 2},
		{"an authority rule", func(e *engine.Engine) error {
			return e.LoadAuthorityRules([]engine.AuthorityRule{{Name: "a", Resource: "r", Strategy: engine.AuthorityDeny, Origins: []string{"bob"}}})
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := engine.New(engine.Options{})
			t.Cleanup(e.Close)
			res := e.Resource("r")
			if err := tc.load(e); err != nil {
				t.Fatal(err)
			}
			reads := 0
			opts := x.Append(nil, res, countingRequest{&reads})
			if len(opts) != tc.wants || reads != tc.wants/2 {
				t.Fatalf("%d options and %d address reads, want %d and %d", len(opts), reads, tc.wants, tc.wants/2)
			}
		})
	}
}
