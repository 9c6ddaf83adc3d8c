package server

import (
	"encoding/json"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// breakerFeedSize is how many transitions may wait for the stream; past
// it the newest are dropped rather than hold up the call that caused them.
const breakerFeedSize = 1024

// BreakerFeed carries the engine's circuit breaker transitions to the
// store (GET /breakers/transitions) and the metric stream, where they go
// out as "breaker" events. The engine is
// created first, so create the feed before it, give Notify to
// engine.Options.OnBreakerStateChange and the feed to Config.BreakerFeed.
type BreakerFeed struct {
	changes chan engine.BreakerStateChange
}

// NewBreakerFeed returns an empty feed.
func NewBreakerFeed() *BreakerFeed {
	return &BreakerFeed{changes: make(chan engine.BreakerStateChange, breakerFeedSize)}
}

// Notify queues a transition. It never blocks, as the engine requires.
func (f *BreakerFeed) Notify(change engine.BreakerStateChange) {
	select {
	case f.changes <- change:
	default:
	}
}

// BreakerEvent is the data of one "breaker" event of the metric stream: a
// circuit breaker changed state.
type BreakerEvent struct {
	Rule     string    `json:"rule" example:"pay-errors"`
	Resource string    `json:"resource" example:"POST:/api/pay"`
	From     string    `json:"from" enums:"closed,open,halfOpen" example:"closed"`
	To       string    `json:"to" enums:"closed,open,halfOpen" example:"open"`
	Time     time.Time `json:"time" format:"date-time"`
}

// breakerEvent is a transition as the API shows it.
func breakerEvent(c engine.BreakerStateChange) BreakerEvent {
	return BreakerEvent{Rule: c.Rule, Resource: c.Resource, From: string(c.From), To: string(c.To), Time: time.UnixMilli(c.AtMs).UTC()}
}

// breakerAnnouncement is the webhook event of a transition: its type
// names the state the breaker entered, its data is the BreakerEvent.
func breakerAnnouncement(c engine.BreakerStateChange) store.Announcement {
	kind := eventBreakerClosed
	switch c.To {
	case engine.BreakerOpen:
		kind = eventBreakerOpened
	case engine.BreakerHalfOpen:
		kind = eventBreakerHalfOpen
	}
	data, _ := json.Marshal(breakerEvent(c)) // plain structs always encode
	return store.Announcement{Type: kind, Data: data, Apps: []string{""}, Resources: []string{c.Resource}}
}
