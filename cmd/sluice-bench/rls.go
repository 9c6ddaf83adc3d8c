package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// rlsFigures drives a running sluice's rate limit service
// (ShouldRateLimit, one descriptor) and its HTTP check API in turn, each
// with the same number of concurrent callers for the same time, count
// times, and prints each run's throughput and latency percentiles and
// the medians: the figures of docs/envoy.md's benchmark.
func rlsFigures(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rls", flag.ContinueOnError)
	grpcAddr := fs.String("grpc", "127.0.0.1:8081", "the rate limit service's address (sluice --grpc-addr)")
	httpURL := fs.String("http", "http://127.0.0.1:8080", "sluice's HTTP address, for the check API; empty to skip it")
	token := fs.String("token", "", "a bearer token that may decide (role instance)")
	domain := fs.String("domain", "bench", "the descriptors' domain")
	entry := fs.String("descriptor", "route=checkout", "the one descriptor entry, key=value")
	resource := fs.String("resource", "bench:route=checkout", "the resource the check API asks for: the descriptor's")
	callers := fs.Int("concurrency", 64, "concurrent callers (gRPC streams, HTTP connections)")
	duration := fs.Duration("duration", 5*time.Second, "how long each run lasts")
	count := fs.Int("count", 5, "runs of each, alternated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	client, req, closeConn, err := rlsClient(*grpcAddr, *domain, *entry)
	if err != nil {
		return err
	}
	defer closeConn()
	grpcCtx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+*token)
	shouldRateLimit := func() error {
		_, err := client.ShouldRateLimit(grpcCtx, req)
		return err
	}
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *callers, MaxConnsPerHost: *callers}}
	body := []byte(`{"resource":"` + *resource + `"}`)
	check := func() error {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, *httpURL+"/api/v1/check", bytes.NewReader(body))
		if err != nil {
			return err
		}
		r.Header.Set("Authorization", "Bearer "+*token)
		r.Header.Set("Content-Type", "application/json")
		resp, err := httpClient.Do(r)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("check: %s", resp.Status)
		}
		return nil
	}
	kinds := []struct {
		name string
		call func() error
	}{{"ShouldRateLimit", shouldRateLimit}}
	if *httpURL != "" {
		kinds = append(kinds, struct {
			name string
			call func() error
		}{"HTTP check", check})
	}
	results := map[string][]loadResult{}
	for i := range *count {
		for _, k := range kinds {
			res, err := driveCalls(ctx, k.call, *callers, *duration)
			if err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			results[k.name] = append(results[k.name], res)
			fmt.Printf("run %d %-16s %9.0f req/s  p50 %7.3f ms  p99 %7.3f ms\n", i+1, k.name, res.perSecond, ms(res.p50), ms(res.p99))
		}
	}
	for _, k := range kinds {
		rs := results[k.name]
		fmt.Printf("median %-13s %9.0f req/s  p50 %7.3f ms  p99 %7.3f ms  (%d runs, %d callers, %v each)\n", k.name,
			median(rs, func(r loadResult) float64 { return r.perSecond }),
			median(rs, func(r loadResult) float64 { return ms(r.p50) }),
			median(rs, func(r loadResult) float64 { return ms(r.p99) }), len(rs), *callers, *duration)
	}
	return nil
}

// rlsClient connects to the rate limit service at addr and returns a
// client, the request of one descriptor of domain whose one entry is
// entry (key=value), and what closes the connection.
func rlsClient(addr, domain, entry string) (pb.RateLimitServiceClient, *pb.RateLimitRequest, func() error, error) {
	key, value, ok := strings.Cut(entry, "=")
	if !ok {
		return nil, nil, nil, errors.New("--descriptor: want key=value")
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, nil, err
	}
	req := &pb.RateLimitRequest{Domain: domain, Descriptors: []*rlcommon.RateLimitDescriptor{
		{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: key, Value: value}}},
	}}
	return pb.NewRateLimitServiceClient(conn), req, conn.Close, nil
}

// loadResult is one run's throughput and latency percentiles.
type loadResult struct {
	perSecond float64
	p50, p99  time.Duration
}

// driveCalls calls call from callers goroutines for d and measures each call.
func driveCalls(ctx context.Context, call func() error, callers int, d time.Duration) (loadResult, error) {
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t := time.Now()
				if err := call(); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if firstErr != nil {
		return loadResult{}, firstErr
	}
	if len(all) == 0 {
		return loadResult{}, errors.New("no call completed")
	}
	elapsed := time.Since(start)
	slices.Sort(all)
	return loadResult{perSecond: float64(len(all)) / elapsed.Seconds(), p50: all[len(all)/2], p99: all[len(all)*99/100]}, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(rs []loadResult, f func(loadResult) float64) float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

// rlsAccuracy paces calls of one descriptor at a rate over its limit
// against a rate limit service (Sluice's, or envoyproxy/ratelimit: the
// same protocol) and prints what passed in each wall-clock second and in
// the busiest real second: a sliding window's exactness beside a fixed
// window's boundary, measured the same way.
func rlsAccuracy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rls-accuracy", flag.ContinueOnError)
	grpcAddr := fs.String("grpc", "127.0.0.1:8081", "the rate limit service's address")
	token := fs.String("token", "", "a bearer token that may decide (none for envoyproxy/ratelimit)")
	domain := fs.String("domain", "bench", "the descriptor's domain")
	entry := fs.String("descriptor", "route=paced", "the one descriptor entry, key=value")
	rate := fs.Float64("rate", 300, "calls per second, paced")
	duration := fs.Duration("duration", 10*time.Second, "how long to call")
	if err := fs.Parse(args); err != nil {
		return err
	}
	client, req, closeConn, err := rlsClient(*grpcAddr, *domain, *entry)
	if err != nil {
		return err
	}
	defer closeConn()
	if *token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+*token)
	}
	var mu sync.Mutex
	var passes []time.Time
	var wg sync.WaitGroup
	var firstErr error
	interval := time.Duration(float64(time.Second) / *rate)
	start := time.Now()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= *duration {
			break
		}
		time.Sleep(time.Until(at))
		wg.Go(func() {
			sent := time.Now()
			resp, err := client.ShouldRateLimit(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				firstErr = cmpErr(firstErr, err)
			case resp.GetOverallCode() == pb.RateLimitResponse_OK && time.Since(sent) < 50*time.Millisecond:
				// A pass is placed at its send time: one answered later
				// than 50 ms could belong to either second, and is left out.
				passes = append(passes, sent)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	perSecond := map[int64]int{}
	for _, p := range passes {
		perSecond[p.Unix()]++
	}
	first, last := start.Unix()+1, start.Add(*duration).Unix()-1
	var seconds []string
	for s := first; s < last; s++ {
		seconds = append(seconds, fmt.Sprint(perSecond[s]))
	}
	slices.SortFunc(passes, func(a, b time.Time) int { return a.Compare(b) })
	busiest, lo := 0, 0
	for hi, p := range passes {
		for passes[lo].Add(time.Second).Compare(p) <= 0 {
			lo++
		}
		busiest = max(busiest, hi-lo+1)
	}
	fmt.Printf("paced at %.0f/s for %v: passes per wall-clock second (whole seconds only): %s\n", *rate, *duration, strings.Join(seconds, " "))
	fmt.Printf("the busiest real second (any 1 s window): %d passes\n", busiest)
	return nil
}
