package metrics

import (
	"github.com/sluicehq/sluice/engine"
)

// Live calls fn with the last second's figures of every resource with
// traffic or calls in flight, and returns the time on the pipeline's clock
// they were read at. fn builds what it needs as it goes: a frame may hold
// 100,000 resources, once a second.
func (p *Pipeline) Live(fn func(name string, live engine.LiveStats)) (atMs int64) {
	atMs = p.NowMs()
	for _, r := range p.engine.Resources() {
		if l := r.Live(); l != (engine.LiveStats{}) {
			fn(r.Name(), l)
		}
	}
	return atMs
}

// LiveCount is how many resources the engine tracks, the most Live may
// call fn for.
func (p *Pipeline) LiveCount() int { return p.engine.ResourceCount() }
