package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// Event types of the cluster count's state (docs/webhooks.md).
const (
	eventClusterFallbackEntered = "cluster.fallbackEntered"
	eventClusterFallbackLeft    = "cluster.fallbackLeft"
)

// clusterFeedSize is how many changes may wait for the relay; past it the
// newest are dropped rather than hold up the engine's round.
const clusterFeedSize = 64

// ClusterFeed carries the changes of the engine's cluster state (its
// scope cluster rules falling back when Redis is unreachable, and back on
// the shared count) to the webhooks. The engine is created first, so
// create the feed before it, give Notify to
// engine.Options.OnClusterStateChange and the feed to Config.ClusterFeed.
type ClusterFeed struct {
	changes chan engine.ClusterStateChange
}

// NewClusterFeed returns an empty feed.
func NewClusterFeed() *ClusterFeed {
	return &ClusterFeed{changes: make(chan engine.ClusterStateChange, clusterFeedSize)}
}

// Notify queues a change. It never blocks, as the engine requires.
func (f *ClusterFeed) Notify(change engine.ClusterStateChange) {
	select {
	case f.changes <- change:
	default:
	}
}

// ClusterEvent is the data of a cluster.fallbackEntered or
// cluster.fallbackLeft event: the server's engine's scope cluster rules
// started deciding by their clusterFallback (Redis unreachable), or went
// back to the shared count.
type ClusterEvent struct {
	// State is fallback or cluster, as GET /cluster shows it.
	State string `json:"state" enums:"cluster,fallback" example:"fallback"`
	// Error is why the count is unreachable; absent when it answers.
	Error string    `json:"error,omitempty" example:"dial tcp 10.0.0.7:6379: connect: connection refused"`
	Time  time.Time `json:"time" format:"date-time"`
	// Rules are the cluster rules loaded then, with their fallbacks.
	Rules []ClusterEventRule `json:"rules"`
}

// ClusterEventRule is a cluster rule in a ClusterEvent.
type ClusterEventRule struct {
	Rule     string `json:"rule" example:"orders-global"`
	Resource string `json:"resource" example:"GET:/api/orders"`
	Fallback string `json:"fallback" example:"local"`
}

// relayClusterChanges publishes every change of feed to the webhooks, each
// in a transaction of its own, until stop is called; stop returns once
// the relay has.
func relayClusterChanges(feed *ClusterFeed, eng *engine.Engine, st *store.Store, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case c := <-feed.changes:
				a := clusterAnnouncement(c, eng.ClusterStatus())
				writeCtx, cancelWrite := context.WithTimeout(ctx, breakerWriteTimeout)
				if _, err := st.Publish(writeCtx, a); err != nil {
					logger.Error("cluster: could not publish a state change to the webhooks", "state", c.State, "error", err)
				}
				cancelWrite()
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// clusterAnnouncement is the webhook event of change, naming the cluster
// rules of status.
func clusterAnnouncement(change engine.ClusterStateChange, status engine.ClusterStatus) store.Announcement {
	ev := ClusterEvent{State: string(change.State), Time: time.UnixMilli(change.AtMs).UTC(), Rules: []ClusterEventRule{}}
	if change.Err != nil {
		ev.Error = change.Err.Error()
	}
	resources := []string{}
	for _, r := range status.Rules {
		ev.Rules = append(ev.Rules, ClusterEventRule{Rule: r.Rule, Resource: r.Resource, Fallback: string(r.Fallback)})
		resources = append(resources, r.Resource)
	}
	kind := eventClusterFallbackLeft
	if change.State == engine.ClusterFallingBack {
		kind = eventClusterFallbackEntered
	}
	data, _ := json.Marshal(ev) // plain structs always encode
	return store.Announcement{Type: kind, Data: data, Apps: []string{""}, Resources: resources}
}
