package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/server/instances"
	"github.com/sluicehq/sluice/store"
)

// Event types of the instances' states (docs/webhooks.md).
const (
	eventInstanceStale = "instance.stale"
	eventInstanceGone  = "instance.gone"
	eventInstanceBack  = "instance.back"
)

// DefaultInstanceWatchInterval is Config.InstanceWatchInterval's default.
const DefaultInstanceWatchInterval = 5 * time.Second

// InstanceEvent is the data of an instance.stale, instance.gone or
// instance.back event: an instance's state changed (docs/api.md,
// "Instances": live, stale, gone).
type InstanceEvent struct {
	ID       string    `json:"id" example:"checkout-7f9c"`
	App      string    `json:"app,omitempty" example:"checkout"`
	Hostname string    `json:"hostname" example:"checkout-7f9c"`
	From     string    `json:"from" enums:"live,stale,gone" example:"live"`
	To       string    `json:"to" enums:"live,stale,gone" example:"stale"`
	LastSeen time.Time `json:"lastSeen" format:"date-time"`
}

// watchInstanceStates compares, every interval until stop is called, the
// instances' states with those last announced to the webhooks, and
// announces each change: a state is derived from the time of the last
// report, so no report tells of an instance falling silent. Replicas all
// watch; the store lets one announce each change (AnnounceInstanceState).
// An instance first seen is recorded without an event.
func watchInstanceStates(registry *instances.Registry, st *store.Store, interval time.Duration, logger *slog.Logger) (stop func()) {
	return every(interval, func(ctx context.Context) {
		if err := announceInstanceStates(ctx, registry, st); err != nil && ctx.Err() == nil {
			logger.Error("instances: announcing their state changes to the webhooks failed", "error", err)
		}
	})
}

// announceInstanceStates announces every instance whose state is not the
// one last announced.
func announceInstanceStates(ctx context.Context, registry *instances.Registry, st *store.Store) error {
	announced, err := st.AnnouncedInstanceStates(ctx)
	if err != nil {
		return err
	}
	list, err := registry.List(ctx, "")
	if err != nil {
		return err
	}
	for _, inst := range list {
		from, known := announced[inst.ID]
		if known && from == inst.State {
			continue
		}
		var a store.Announcement
		if known {
			a = instanceAnnouncement(inst, from)
		}
		if _, err := st.AnnounceInstanceState(ctx, inst.ID, from, inst.State, a); err != nil {
			return err
		}
	}
	return nil
}

// instanceAnnouncement is the event of inst's change from state from.
func instanceAnnouncement(inst instances.Instance, from string) store.Announcement {
	kind := eventInstanceBack
	switch inst.State {
	case instances.StateStale:
		kind = eventInstanceStale
	case instances.StateGone:
		kind = eventInstanceGone
	}
	data, _ := json.Marshal(InstanceEvent{
		ID: inst.ID, App: inst.App, Hostname: inst.Hostname, From: from, To: inst.State, LastSeen: inst.LastSeen,
	}) // plain structs always encode
	return store.Announcement{Type: kind, Data: data, Apps: []string{inst.App}}
}
