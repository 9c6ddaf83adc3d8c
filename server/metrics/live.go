package metrics

import (
	"github.com/sluicehq/sluice/engine"
)

// Live calls fn with the last second's figures of every resource with
// traffic or calls in flight, the engine's summed with the reporting
// instances', and returns the time on the pipeline's clock they were read
// at. fn builds what it needs as it goes: a frame may hold 100,000
// resources, once a second.
func (p *Pipeline) Live(fn func(name string, live engine.LiveStats)) (atMs int64) {
	atMs = p.NowMs()
	p.eachLive(fn)
	return atMs
}

// LiveCount is how many resources the engine tracks, about the most Live
// calls fn for.
func (p *Pipeline) LiveCount() int { return p.engine.ResourceCount() }
