package main

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
)

// TestSearchBackendCapacity: GET /search takes its base time within its
// capacity and longer past it, PUT /sluice/capacity changes the capacity
// at run time, and the route is guarded: an adaptive rule of limit 1
// refuses a second call in flight.
func TestSearchBackendCapacity(t *testing.T) {
	b := &searchBackend{baseMs: 50}
	b.capacity.Store(10)
	if b.latency(5) != 50*time.Millisecond || b.latency(30) != 150*time.Millisecond {
		t.Fatalf("latency at 5 and 30 in flight: %v, %v", b.latency(5), b.latency(30))
	}
	eng := engine.New(engine.Options{})
	t.Cleanup(eng.Close)
	err := eng.LoadAdaptiveConcurrencyRules([]engine.AdaptiveConcurrencyRule{{Name: "search", Resource: "GET /search", InitialLimit: 1, MinLimit: 1, MaxLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.handler(eng))
	t.Cleanup(srv.Close)
	put := func(query string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/sluice/capacity?"+query, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := put("calls=2"); got != http.StatusNoContent || b.capacity.Load() != 2 {
		t.Fatalf("PUT calls=2: %d, capacity %d", got, b.capacity.Load())
	}
	if got := put("calls=0"); got != http.StatusBadRequest || b.capacity.Load() != 2 {
		t.Fatalf("PUT calls=0: %d, capacity %d", got, b.capacity.Load())
	}
	b.baseMs = 2_000 // the first call stays in flight while the second asks
	first := make(chan int, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/search")
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	deadline := time.Now().Add(5 * time.Second)
	for b.inFlight.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first call never reached the backend")
		}
		runtime.Gosched()
	}
	resp, err := http.Get(srv.URL + "/search")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second call in flight: %d, want 429", resp.StatusCode)
	}
	if got := <-first; got != http.StatusOK {
		t.Fatalf("first call: %d", got)
	}
}
