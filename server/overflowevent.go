package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// eventResourceOverflow is the event type of the engine counting calls
// under engine.OverflowResource (docs/webhooks.md).
const eventResourceOverflow = "resource.overflow"

// OverflowEvent is the data of a resource.overflow event: the server's
// engine tracks its maximum of resources (--max-resources) and counted
// calls on new ones under (overflow). Sent with the server's warning, at
// most once a minute.
type OverflowEvent struct {
	// Calls is how many calls overflowed since the last such event.
	Calls int64 `json:"calls" example:"1200"`
	// Example is the name of one of them.
	Example      string    `json:"example" example:"GET:/api/orders/8412"`
	MaxResources int       `json:"maxResources" example:"100000"`
	Time         time.Time `json:"time" format:"date-time"`
}

// publishOverflow returns the metrics pipeline's OnOverflow: it publishes
// a resource.overflow event in a transaction of its own.
func publishOverflow(eng *engine.Engine, st *store.Store, now func() time.Time, logger *slog.Logger) func(calls int64, example string) {
	return func(calls int64, example string) {
		data, _ := json.Marshal(OverflowEvent{Calls: calls, Example: example, MaxResources: eng.MaxResources(), Time: now().UTC()}) // plain structs always encode
		ctx, cancel := context.WithTimeout(context.Background(), breakerWriteTimeout)
		defer cancel()
		a := store.Announcement{Type: eventResourceOverflow, Data: data, Apps: []string{""}, Resources: []string{engine.OverflowResource}}
		if _, err := st.Publish(ctx, a); err != nil {
			logger.Error("resources: could not publish the overflow to the webhooks", "error", err)
		}
	}
}
