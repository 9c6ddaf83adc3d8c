// Command sluice-bench holds the tools behind the check API's benchmark
// figures (see README.md beside it):
//
//	sluice-bench hello [-addr :8081]
//	sluice-bench accuracy [-server http://127.0.0.1:8080] [-threshold 100] [-duration 10s] [-workers 16]
//	sluice-bench cardinality -pid PID [-server http://127.0.0.1:8080] [-names 1000000]
//
// hello serves the HTTP ceiling of the machine: a Fiber handler answering a
// POST with a fixed 60-byte JSON. accuracy creates a reject rule through a
// running server's API, hammers POST /check for the duration, and reports
// the most passes any one-second window held. cardinality sends checks on
// ever new names and reports the server's resident memory as they add up,
// then what a scrape, a stream tick and a resource list cost.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: sluice-bench hello|accuracy|cardinality [flags]")
	}
	switch args[0] {
	case "hello":
		return hello(ctx, args[1:])
	case "accuracy":
		return accuracy(ctx, args[1:])
	case "cardinality":
		return cardinality(ctx, args[1:])
	}
	return fmt.Errorf("unknown command %q; commands: hello, accuracy, cardinality", args[0])
}

// helloBody is the fixed answer, 60 bytes.
var helloBody = []byte(`{"allowed":true,"waitMs":0,"note":"hello from sluice-bench"}`)

func hello(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("hello", flag.ContinueOnError)
	addr := fs.String("addr", ":8081", "address to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Post("/", func(c *fiber.Ctx) error {
		c.Response().Header.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
		return c.Send(helloBody)
	})
	go func() {
		<-ctx.Done()
		_ = app.Shutdown()
	}()
	fmt.Printf("hello: answering POST / with %d bytes on %s\n", len(helloBody), *addr)
	return app.Listen(*addr)
}

func accuracy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("accuracy", flag.ContinueOnError)
	server := fs.String("server", "http://127.0.0.1:8080", "the Sluice server")
	threshold := fs.Int("threshold", 100, "the rule's passes per second")
	duration := fs.Duration("duration", 10*time.Second, "how long to hammer")
	workers := fs.Int("workers", 16, "concurrent clients")
	token := fs.String("token", os.Getenv("SLUICE_TOKEN"), "an editor or admin API token (default $SLUICE_TOKEN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	resource := fmt.Sprintf("accuracy-%d", time.Now().UnixNano())
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: *workers},
	}
	rule := fmt.Sprintf(`{"kind": "flow", "resource": %q, "threshold": %d}`, resource, *threshold)
	if status, body, err := post(client, *server+"/api/v1/rules", *token, rule); err != nil || status != http.StatusCreated {
		return fmt.Errorf("creating the rule: %d %s %v", status, body, err)
	}

	check := fmt.Sprintf(`{"resource": %q}`, resource)
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	start := time.Now()
	var mu sync.Mutex
	var passes []time.Duration // since start, when the answer arrived
	var requests, errs int
	var wg sync.WaitGroup
	for range *workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				status, body, err := post(client, *server+"/api/v1/check", *token, check)
				at := time.Since(start)
				var r struct {
					Allowed bool `json:"allowed"`
				}
				ok := err == nil && status == http.StatusOK && json.Unmarshal(body, &r) == nil
				mu.Lock()
				requests++
				switch {
				case !ok:
					errs++
				case r.Allowed:
					passes = append(passes, at)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	slices.Sort(passes)
	maxWindow, maxAt := 0, time.Duration(0)
	for i, j := 0, 0; i < len(passes); i++ {
		for j < len(passes) && passes[j]-passes[i] < time.Second {
			j++
		}
		if j-i > maxWindow {
			maxWindow, maxAt = j-i, passes[i]
		}
	}
	fmt.Printf("resource %s, threshold %d/s, %d workers, %v\n", resource, *threshold, *workers, elapsed.Round(time.Millisecond))
	fmt.Printf("requests %d (%.0f/s), errors %d, passes %d (%.1f/s)\n",
		requests, float64(requests)/elapsed.Seconds(), errs, len(passes), float64(len(passes))/elapsed.Seconds())
	fmt.Printf("most passes in any 1-second window: %d (from %v)\n", maxWindow, maxAt.Round(time.Microsecond))
	perSecond := make([]int, int(elapsed/time.Second)+1)
	for _, p := range passes {
		perSecond[p/time.Second]++
	}
	fmt.Printf("passes per wall-clock second from the start: %v\n", perSecond)
	if maxWindow > *threshold*110/100 {
		return fmt.Errorf("a 1-second window held %d passes, over %d", maxWindow, *threshold*110/100)
	}
	return nil
}

// post sends body as JSON with the bearer token and reads the answer.
func post(client *http.Client, url, token, body string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}
