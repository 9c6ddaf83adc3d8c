package instances

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// collector exposes how many instances of each app are in each state.
type collector struct {
	registry *Registry
	desc     *prometheus.Desc
}

// Collector returns the Prometheus collector of r's instances:
// sluice_instances{app, state}, one series per app and state (live,
// stale, gone), read from the store at each scrape. Apps are as many as
// the instances, which --max-instances bounds.
func (r *Registry) Collector() prometheus.Collector {
	return &collector{registry: r, desc: prometheus.NewDesc("sluice_instances",
		"Instances reporting to the server, by app and state: live, stale (silent for 10 s), gone (silent for 5 minutes).",
		[]string{"app", "state"}, nil)}
}

// Describe sends the one description.
func (c *collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect counts the instances by app and state; a store that does not
// answer within 5 s leaves the series out of this scrape.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := c.registry.List(ctx, "")
	if err != nil {
		return
	}
	counts := map[string]map[string]int{}
	for _, in := range list {
		if counts[in.App] == nil {
			counts[in.App] = map[string]int{}
		}
		counts[in.App][in.State]++
	}
	for app, states := range counts {
		for _, state := range []string{StateLive, StateStale, StateGone} {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(states[state]), app, state)
		}
	}
}
