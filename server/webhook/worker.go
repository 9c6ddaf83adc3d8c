package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/sluicehq/sluice/store"
)

// Defaults of Options (docs/webhooks.md).
const (
	DefaultPollInterval       = time.Second
	DefaultTimeout            = 10 * time.Second
	DefaultConcurrency        = 8
	DefaultBackoffBase        = 5 * time.Second
	DefaultBackoffMax         = time.Hour
	DefaultRetryFor           = 24 * time.Hour
	DefaultPauseAfterFailures = 20
	DefaultPauseAfter         = 12 * time.Hour
)

// MaxPayloadBytes bounds the body of one delivery: an event whose payload
// is larger is failed at its first attempt, never posted.
const MaxPayloadBytes = 256 << 10

// maxResponseBytes is how much of a receiver's answer is read: enough
// for the error it may explain, which the delivery's lastError keeps.
const maxResponseBytes = 4 << 10

// maxErrorChars bounds the lastError of a delivery.
const maxErrorChars = 300

// Options configure a Worker.
type Options struct {
	// Store holds the outbox. Required.
	Store *store.Store
	// Logger receives the worker's logs. Optional. Default: slog.Default().
	Logger *slog.Logger
	// Node names this worker's claims; replicas need names of their own.
	// Optional. Default: the host's name, the process id and a random
	// suffix.
	Node string
	// Now tells the time. Optional. Default: time.Now.
	Now func() time.Time
	// AllowPrivate lets deliveries reach the addresses Refused names
	// (--webhook-allow-private). Optional. Default: false.
	AllowPrivate bool
	// PollInterval is how often the outbox is read for due deliveries.
	// Optional. Default: DefaultPollInterval (1s).
	PollInterval time.Duration
	// Timeout bounds one delivery, connection to answer. Optional.
	// Default: DefaultTimeout (10s).
	Timeout time.Duration
	// Concurrency bounds the deliveries in flight. Optional. Default:
	// DefaultConcurrency (8).
	Concurrency int
	// BackoffBase and BackoffMax shape the wait before the n-th retry: a
	// random time up to min(BackoffMax, BackoffBase·2^(n-1)). Optional.
	// Defaults: DefaultBackoffBase (5s), DefaultBackoffMax (1h).
	BackoffBase, BackoffMax time.Duration
	// RetryFor is how long after its first failure a delivery is retried
	// before it is failed. Optional. Default: DefaultRetryFor (24h).
	RetryFor time.Duration
	// PauseAfterFailures and PauseAfter pause an endpoint whose attempts
	// failed that many times in a row over at least that long. Optional.
	// Defaults: DefaultPauseAfterFailures (20), DefaultPauseAfter (12h).
	PauseAfterFailures int
	PauseAfter         time.Duration
}

// Worker delivers the outbox's due deliveries until it is stopped.
type Worker struct {
	opts   Options
	client *http.Client
	nudge  chan struct{}
	stop   context.CancelFunc
	done   chan struct{}
}

// New returns a worker of opts, not started.
func New(opts Options) *Worker {
	opts.Logger = cmp.Or(opts.Logger, slog.Default())
	if opts.Node == "" {
		host, _ := os.Hostname()
		suffix := make([]byte, 4)
		_, _ = rand.Read(suffix)
		opts.Node = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(suffix))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.PollInterval = cmp.Or(opts.PollInterval, DefaultPollInterval)
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	opts.Concurrency = cmp.Or(opts.Concurrency, DefaultConcurrency)
	opts.BackoffBase = cmp.Or(opts.BackoffBase, DefaultBackoffBase)
	opts.BackoffMax = cmp.Or(opts.BackoffMax, DefaultBackoffMax)
	opts.RetryFor = cmp.Or(opts.RetryFor, DefaultRetryFor)
	opts.PauseAfterFailures = cmp.Or(opts.PauseAfterFailures, DefaultPauseAfterFailures)
	opts.PauseAfter = cmp.Or(opts.PauseAfter, DefaultPauseAfter)
	return &Worker{opts: opts, client: newClient(opts), nudge: make(chan struct{}, 1)}
}

// newClient is the HTTP client of deliveries: no proxy (it would connect
// where the dialer's check cannot see), no redirects (a 3xx is a failure),
// and unless AllowPrivate a dialer that refuses the addresses Refused
// names, checked on the address actually dialled.
func newClient(opts Options) *http.Client {
	dialer := &net.Dialer{Timeout: opts.Timeout}
	if !opts.AllowPrivate {
		dialer.Control = refuseAddress
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
	}
	return &http.Client{
		Transport:     transport,
		Timeout:       opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Start runs the worker on a goroutine of its own until Stop.
func (w *Worker) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	w.stop, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		tick := time.NewTicker(w.opts.PollInterval)
		defer tick.Stop()
		for {
			w.deliverDue(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-w.nudge:
			}
		}
	}()
}

// Stop ends the worker, cutting short the deliveries in flight, and
// releases their claims, so that another server (a replica, or this one
// restarted) attempts them at once: the receiver may see an event it was
// being sent again, under the same webhook-id.
func (w *Worker) Stop() {
	if w.stop == nil {
		return
	}
	w.stop()
	<-w.done
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := w.opts.Store.ReleaseDeliveries(ctx, w.opts.Node); err != nil {
		w.opts.Logger.Warn("webhooks: releasing the deliveries cut short failed; they wait for their leases to end", "error", err)
	}
}

// releaseTimeout bounds Stop's release of its claims.
const releaseTimeout = 5 * time.Second

// Nudge has the worker read the outbox now rather than at its next poll:
// an event was published.
func (w *Worker) Nudge() {
	select {
	case w.nudge <- struct{}{}:
	default:
	}
}

// lease is how long a claim holds: past a delivery's timeout, so that
// only a worker gone (or stuck past it) loses its claim.
func (w *Worker) lease() time.Duration { return 2*w.opts.Timeout + 30*time.Second }

// deliverDue delivers what is due, Concurrency at a time, until nothing
// is.
func (w *Worker) deliverDue(ctx context.Context) {
	for ctx.Err() == nil {
		nowMs := w.opts.Now().UnixMilli()
		due, err := w.opts.Store.ClaimDeliveries(ctx, w.opts.Node, nowMs, w.lease().Milliseconds(), w.opts.Concurrency)
		if err != nil {
			if ctx.Err() == nil {
				w.opts.Logger.Error("webhooks: claiming due deliveries failed", "error", err)
			}
			return
		}
		var wg sync.WaitGroup
		for _, d := range due {
			wg.Go(func() { w.deliver(ctx, d) })
		}
		wg.Wait()
		if len(due) < w.opts.Concurrency {
			return
		}
	}
}

// deliver makes one attempt at d and records how it went.
func (w *Worker) deliver(ctx context.Context, d store.DueDelivery) {
	status, failure := w.post(ctx, d)
	if ctx.Err() != nil {
		return // stopped: the claim's lease lets another attempt it
	}
	now := w.opts.Now()
	attempt := store.Attempt{
		AtMs: now.UnixMilli(), Status: status, Error: failure,
		NextAttemptMs:      now.Add(w.backoff(d.Attempts + 1)).UnixMilli(),
		RetryForMs:         w.opts.RetryFor.Milliseconds(),
		PauseAfterFailures: w.opts.PauseAfterFailures, PauseAfterMs: w.opts.PauseAfter.Milliseconds(),
	}
	if len(d.Payload) > MaxPayloadBytes {
		attempt.NextAttemptMs = attempt.AtMs + attempt.RetryForMs + 1 // failed now: it never fits
	}
	paused, err := w.opts.Store.FinishDelivery(context.WithoutCancel(ctx), d.ID, w.opts.Node, attempt)
	if err != nil {
		w.opts.Logger.Error("webhooks: recording a delivery failed; it will be attempted again", "delivery", d.ID, "error", err)
		return
	}
	if paused {
		w.opts.Logger.Warn("webhooks: an endpoint kept failing and is paused until an admin resumes it", "endpoint", d.EndpointID, "error", failure)
	}
}

// backoff is the wait before retry n (from 1), with full jitter.
func (w *Worker) backoff(n int) time.Duration {
	ceiling := w.opts.BackoffMax
	if n < 40 {
		ceiling = min(ceiling, w.opts.BackoffBase<<(n-1))
	}
	if ceiling <= 0 {
		return 0
	}
	return mrand.N(ceiling + 1)
}

// post sends d once and returns the receiver's status and, unless it
// answered 2xx, why the attempt failed.
func (w *Worker) post(ctx context.Context, d store.DueDelivery) (int, string) {
	if len(d.Payload) > MaxPayloadBytes {
		return 0, fmt.Sprintf("the payload is %d bytes, over the %d a delivery carries", len(d.Payload), MaxPayloadBytes)
	}
	signer, err := standardwebhooks.NewWebhook(d.Secret)
	if err != nil {
		return 0, "the endpoint's secret is not valid"
	}
	body := []byte(d.Payload)
	ts := w.opts.Now()
	signature, err := signer.Sign(d.EventID, ts, body)
	if err != nil {
		return 0, "signing failed: " + err.Error()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "the URL is not valid: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Sluice-Webhooks/1")
	req.Header.Set(standardwebhooks.HeaderWebhookID, d.EventID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(ts.Unix()))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, signature)
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, clip(err.Error())
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, ""
	}
	msg := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		msg += " (redirects are not followed)"
	}
	if text := strings.TrimSpace(strings.ToValidUTF8(string(answer), "")); text != "" {
		msg += ": " + text
	}
	return resp.StatusCode, clip(msg)
}

// clip bounds an error message to maxErrorChars characters.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxErrorChars {
		return s
	}
	return string([]rune(s)[:maxErrorChars]) + "…"
}

// NewSecret is a new endpoint secret: "whsec_" and the base64 of 32
// random bytes, as Standard Webhooks spells them.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
}
