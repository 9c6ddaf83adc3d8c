package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/nethttp"
)

// searchBackend is a service of a capacity that changes at run time, for
// an adaptive concurrency rule to find: capacity calls at once take
// baseMs each, and more share it, each taking baseMs × in flight ÷
// capacity, as a saturated server's calls queue.
type searchBackend struct {
	capacity atomic.Int64
	inFlight atomic.Int64
	baseMs   int64
}

// latency is how long a call takes that starts with inFlight calls in
// flight, itself included.
func (b *searchBackend) latency(inFlight int64) time.Duration {
	return time.Duration(max(b.baseMs, b.baseMs*inFlight/b.capacity.Load())) * time.Millisecond
}

// search serves GET /search: it takes the backend's time, then answers.
func (b *searchBackend) search(w http.ResponseWriter, r *http.Request) {
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	select {
	case <-time.After(b.latency(n)):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"results": []string{}}) // an error means the client is gone
}

// setCapacity serves PUT /sluice/capacity?calls=N: the backend serves N
// calls at once from then on.
func (b *searchBackend) setCapacity(w http.ResponseWriter, r *http.Request) {
	calls, err := strconv.ParseInt(r.URL.Query().Get("calls"), 10, 64)
	if err != nil || calls < 1 {
		http.Error(w, "calls must be a whole number >= 1", http.StatusBadRequest)
		return
	}
	b.capacity.Store(calls)
	w.WriteHeader(http.StatusNoContent)
}

// handler is GET /search guarded by eng (resource "GET /search") and PUT
// /sluice/capacity, unguarded.
func (b *searchBackend) handler(eng *engine.Engine) http.Handler {
	search := http.NewServeMux()
	search.HandleFunc("GET /search", b.search)
	mux := http.NewServeMux()
	mux.Handle("GET /search", nethttp.Guard(eng)(search))
	mux.HandleFunc("PUT /sluice/capacity", b.setCapacity)
	return mux
}

// driveSearch keeps clients calls to GET /search at base in flight until
// ctx ends: each client calls again as soon as its call is answered, or
// after 10 ms when it was refused.
func driveSearch(ctx context.Context, base string, clients int) {
	client := &http.Client{Timeout: 10 * time.Second}
	for range clients {
		go func() {
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/search", nil)
				if err != nil {
					return
				}
				resp, err := client.Do(req)
				refused := err != nil || resp.StatusCode != http.StatusOK
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if refused {
					select {
					case <-ctx.Done():
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		}()
	}
}
