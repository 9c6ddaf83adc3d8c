package shop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/engine/middleware/nethttp"
	"github.com/sluicehq/sluice/engine/remote"
)

// Handler is the shop's HTTP handler: GET /orders, GET /orders/{id} and
// POST /checkout, guarded by the client's engine (each a resource named by
// method and pattern, with the params "header:X-User" and "ip" and the
// origin from the X-Origin header), and GET /sluice/state, the client's
// state as JSON, beside them.
func Handler(client *remote.Client) http.Handler {
	shop := http.NewServeMux()
	shop.HandleFunc("GET /orders", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"orders": []int{1, 2, 3}})
	})
	shop.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id")})
	})
	shop.HandleFunc("POST /checkout", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusCreated, map[string]any{"status": "paid"})
	})
	guard := nethttp.Guard(client.Engine(),
		nethttp.WithOrigin(nethttp.Header("X-Origin")),
		nethttp.WithParam(nethttp.Header("X-User")),
		nethttp.WithParam(nethttp.ClientIP()),
	)
	mux := http.NewServeMux()
	mux.Handle("/", guard(shop))
	mux.HandleFunc("GET /sluice/state", func(w http.ResponseWriter, _ *http.Request) {
		s := client.State()
		// The last error with when it was: later than lastSync and
		// lastReport, it is current; earlier, it was overcome.
		lastError, lastErrorAt := "", any(nil)
		if s.LastError != nil {
			lastError, lastErrorAt = s.LastError.Error(), s.LastErrorAt
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"revision": s.Revision, "hasRules": s.HasRules, "fromCache": s.FromCache,
			"lastSync": s.LastSync, "lastReport": s.LastReport, "lastError": lastError, "lastErrorAt": lastErrorAt,
			"bufferedMinutes": s.BufferedMinutes, "droppedMinutes": s.DroppedMinutes,
		})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) // an error means the client is gone
}

// Drive calls the routes of the shop at base perSecond times a second
// until ctx ends, as one of twenty users each time.
func Drive(ctx context.Context, base string, perSecond float64) {
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		method, path := http.MethodGet, fmt.Sprintf("/orders/%d", rand.IntN(100))
		switch rand.IntN(10) {
		case 0:
			path = "/orders"
		case 1:
			method, path = http.MethodPost, "/checkout"
		}
		req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
		if err != nil {
			return
		}
		req.Header.Set("X-User", fmt.Sprintf("user-%d", rand.IntN(20)))
		go func() {
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
}
