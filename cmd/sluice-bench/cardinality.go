package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cardinality sends checks on ever new names to a running server, as a
// client inventing names would, and reports the server's resident memory
// as the names add up, then what a scrape, a stream tick (with the first
// names sent again meanwhile, so that they are live) and a resource list
// cost with the engine full.
func cardinality(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cardinality", flag.ContinueOnError)
	server := fs.String("server", "http://127.0.0.1:8080", "the Sluice server")
	pid := fs.Int("pid", 0, "the server's process id, to read its memory from /proc (required)")
	names := fs.Int("names", 1_000_000, "how many distinct names to send")
	every := fs.Int("report-every", 100_000, "report the memory after this many names")
	live := fs.Int("live", 100_000, "how many of the first names to send again while the stream is read")
	settle := fs.Duration("settle", 12*time.Second, "how long to wait after sending, for a flush to write the names")
	batch := fs.Int("batch", 1000, "checks per POST /check/batch")
	workers := fs.Int("workers", 4, "concurrent clients")
	token := fs.String("token", os.Getenv("SLUICE_TOKEN"), "an API token (default $SLUICE_TOKEN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pid <= 0 || *names < 1 || *every < 1 || *live < 0 || *batch < 1 || *batch > 1000 || *workers < 1 {
		fs.Usage()
		return errors.New("-pid is required; -names, -report-every, -workers must be positive, -batch 1 to 1000")
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: *workers}}
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	report := func(what string) error {
		rss, peak, err := memoryOf(*pid)
		if err != nil {
			return err
		}
		fmt.Printf("%-40s RSS %4d MiB, peak RSS %4d MiB\n", what+":", rss>>20, peak>>20)
		return nil
	}

	if err := report("before"); err != nil {
		return err
	}
	start := time.Now()
	for sent := 0; sent < *names; {
		upTo := min(sent+*every, *names)
		if err := sendNames(ctx, client, *server, *token, run, sent, upTo, *batch, *workers); err != nil {
			return err
		}
		sent = upTo
		if err := report(fmt.Sprintf("%d names sent in %.1fs", sent, time.Since(start).Seconds())); err != nil {
			return err
		}
	}
	select {
	case <-time.After(*settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := report(fmt.Sprintf("%v later", *settle)); err != nil {
		return err
	}

	var overflow string
	for _, encoding := range []string{"identity", "gzip"} {
		took, body, err := get(client, *server+"/metrics", *token, encoding)
		if err != nil {
			return err
		}
		if encoding == "identity" {
			overflow = overflowTotal.FindString(string(body))
		}
		fmt.Printf("GET /metrics (%s): %.1f MiB in %v\n", encoding, float64(len(body))/(1<<20), took.Round(time.Millisecond))
	}
	fmt.Println(overflow)
	if err := report("after the scrapes"); err != nil {
		return err
	}

	again, stop := context.WithCancel(ctx)
	resent := make(chan error, 1)
	go func() {
		for again.Err() == nil {
			if err := sendNames(again, client, *server, *token, run, 0, *live, *batch, *workers); err != nil && again.Err() == nil {
				resent <- err
				return
			}
		}
		resent <- nil
	}()
	size, err := streamEvent(ctx, *server, *token)
	stop()
	if err := errors.Join(err, <-resent); err != nil {
		return err
	}
	fmt.Printf("GET /api/v1/metrics/stream: %.1f MiB a stats event, with the first %d names live\n", float64(size)/(1<<20), *live)
	if err := report("after the stream"); err != nil {
		return err
	}

	for _, query := range []string{"", "page=1000", "sort=-passQps", "q=" + run + "-00001"} {
		var latencies []time.Duration
		for range 21 {
			took, _, err := get(client, *server+"/api/v1/resources?"+query, *token, "identity")
			if err != nil {
				return err
			}
			latencies = append(latencies, took)
		}
		slices.Sort(latencies)
		fmt.Printf("GET /api/v1/resources?%s: p50 %v\n", query, latencies[len(latencies)/2].Round(10*time.Microsecond))
	}
	return report("after the lists")
}

var overflowTotal = regexp.MustCompile(`(?m)^sluice_resource_overflow_total \S+$`)

// sendNames checks the names from to upTo (exclusive), batch by batch.
func sendNames(ctx context.Context, client *http.Client, server, token, run string, from, upTo, batch, workers int) error {
	starts := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for first := range starts {
				var body strings.Builder
				body.WriteString(`{"checks":[`)
				for i := first; i < min(first+batch, upTo); i++ {
					if i > first {
						body.WriteByte(',')
					}
					fmt.Fprintf(&body, `{"resource":"%s-%07d"}`, run, i)
				}
				body.WriteString(`]}`)
				status, answer, err := post(client, server+"/api/v1/check/batch", token, body.String())
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("POST /api/v1/check/batch: %d %.200s", status, answer)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for first := from; first < upTo; first += batch {
		select {
		case starts <- first:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(starts)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
	default:
	}
	return err
}

// get reads url with the token and the Accept-Encoding given, and returns
// how long the whole answer took and its body as sent.
func get(client *http.Client, url, token, encoding string) (time.Duration, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept-Encoding", encoding)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %.200s", url, resp.StatusCode, body)
	}
	return took, body, err
}

// streamEvent reads the metric stream up to its second stats event (the
// first may come before the subscription saw a whole second) and returns
// that event's size.
func streamEvent(ctx context.Context, server, token string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/api/v1/metrics/stream", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	events := bufio.NewReaderSize(resp.Body, 1<<20)
	seen := 0
	for {
		line, err := events.ReadString('\n')
		if err != nil {
			return 0, err
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.HasPrefix(data, `{"time"`) {
			if seen++; seen == 2 {
				return len(data), nil
			}
		}
	}
}

// memoryOf reads a process's resident and peak resident memory, in bytes.
func memoryOf(pid int) (rss, peak int64, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(status)) {
		key, value, _ := strings.Cut(line, ":")
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch {
		case key != "VmRSS" && key != "VmHWM":
		case err != nil:
			return 0, 0, fmt.Errorf("%s in /proc/%d/status: %w", key, pid, err)
		case key == "VmRSS":
			rss = kb << 10
		default:
			peak = kb << 10
		}
	}
	return rss, peak, nil
}
