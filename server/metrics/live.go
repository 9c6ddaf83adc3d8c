package metrics

import (
	"github.com/sluicehq/sluice/engine"
)

// LiveResource is one resource's traffic over the last second.
type LiveResource struct {
	Name string
	engine.LiveStats
}

// Live returns the time on the pipeline's clock and the last second's
// figures of every resource with traffic or calls in flight.
func (p *Pipeline) Live() (atMs int64, resources []LiveResource) {
	tracked := p.engine.Resources()
	// One allocation for the figures: a frame may hold 100,000.
	resources = make([]LiveResource, 0, len(tracked))
	for _, r := range tracked {
		l := r.Live()
		if l == (engine.LiveStats{}) {
			continue
		}
		resources = append(resources, LiveResource{Name: r.Name(), LiveStats: l})
	}
	return p.NowMs(), resources
}
