package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
)

// Defaults of Config.
const (
	DefaultPollWait           = 30 * time.Second
	MaxPollWait               = 60 * time.Second
	DefaultReportInterval     = time.Second
	DefaultMinuteSpread       = 20 * time.Second
	DefaultMaxBufferedMinutes = 10_000
	DefaultMinBackoff         = 500 * time.Millisecond
	DefaultMaxBackoff         = 30 * time.Second
)

// appPattern is docs/api.md's pattern of an app name.
var appPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$`)

// Config configures a Client.
type Config struct {
	// ServerURL is the Sluice server's base URL, such as
	// "https://sluice.internal:8080"; its API is under /api/v1. Required.
	ServerURL string
	// Token is a bearer token, of role instance: it may read the rule
	// snapshot and post reports, and nothing else. Optional. Default: no
	// Authorization header.
	Token string
	// App names the service: the engine runs the rules without an app
	// and those of this app. Required, as docs/api.md's app pattern.
	App string
	// CacheDir keeps the last good rule set, which Start loads so that a
	// restart while the server is away still enforces it. Optional.
	// Default: "", no cache.
	CacheDir string
	// InstanceID identifies this process in reports and in the server's
	// instance list. The server counts a minute once per instance, so an
	// ID must not outlive its process: one reused by a restart within the
	// minute Close reported loses the rest of that minute. Optional.
	// Default: "<hostname>-<pid>".
	InstanceID string
	// Version is the service's version, shown in the instance list.
	// Optional.
	Version string
	// HTTPClient sends the requests; each carries its own deadline, so it
	// needs no Timeout (one shorter than PollWait would cut every long
	// poll). Optional. Default: a client of the Client's own.
	HTTPClient *http.Client
	// Logger receives failures and rule changes. Optional. Default:
	// slog.Default().
	Logger *slog.Logger
	// Engine configures the engine the Client runs. Optional. Its
	// scope cluster rules lease from the server's count (POST
	// /cluster/exchange, as the instance, within DefaultClusterTimeout)
	// unless Engine.Cluster says otherwise.
	Engine engine.Options
	// PollWait is how long the server may hold a snapshot request while
	// the rules do not change. Optional. Default: DefaultPollWait (30s);
	// at most MaxPollWait (60s).
	PollWait time.Duration
	// ReportInterval is how often the engine's figures are collected and
	// posted. Optional. Default: DefaultReportInterval (1s); at most a
	// minute, since the engine keeps a finished minute for one more.
	ReportInterval time.Duration
	// MinuteSpread is how long after a minute ends its rows may wait
	// before they are posted: each Client draws its own delay in [0,
	// MinuteSpread) at New, so that a fleet's minutes reach the server
	// spread over that time rather than all in the second after the
	// minute ends, when each report would wait for the others' rows to
	// be written. Optional. Default: DefaultMinuteSpread (20s); at most
	// 50s; negative posts each minute as soon as it ends. Close posts
	// every minute whatever its delay.
	MinuteSpread time.Duration
	// MaxBufferedMinutes bounds the finished minutes kept while the
	// server does not take them; past it the oldest are dropped and
	// counted (State.DroppedMinutes). Optional. Default:
	// DefaultMaxBufferedMinutes (10,000).
	MaxBufferedMinutes int
	// MinBackoff and MaxBackoff bound the wait before retrying a failed
	// request, doubling from one to the other, with jitter. Optional.
	// Default: DefaultMinBackoff (0.5s) and DefaultMaxBackoff (30s).
	MinBackoff, MaxBackoff time.Duration
	// Now tells the time of State's LastSync, LastReport and LastErrorAt,
	// and when a failed report may be retried and a poll was answered too
	// soon; the waits themselves run on timers. It is apart from
	// Engine.Clock, which times the engine's windows. Optional. Default:
	// time.Now.
	Now func() time.Time
}

// Client runs an engine on the rules of a Sluice server and reports its
// traffic there. Create one with New, Start it, call Entry on its Engine,
// and Close it when the service stops.
type Client struct {
	cfg         Config
	engine      *engine.Engine
	http        *http.Client
	logger      *slog.Logger
	snapshotURL string
	reportURL   string
	hostname    string
	pid         int
	// load puts a snapshot in force and stats are what is reported: the
	// engine's, or the Hooks of NewWith.
	load  func(wire.Snapshot) error
	stats Stats

	// loadMu serialises rule loads, from the cache and from the server:
	// the Client is the only loader of its engine's rules.
	loadMu sync.Mutex
	// pollETag is the revision the next snapshot request names in
	// If-None-Match: the last the server answered, loaded or refused, so
	// that a refused set is not fetched again until the rules change.
	// Guarded by loadMu.
	pollETag string

	reports *reporter

	ready     chan struct{}
	readyOnce sync.Once

	loops     sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	mu         sync.Mutex // guards the fields below
	started    bool
	closed     bool
	cancel     context.CancelFunc
	revision   int64
	hasRules   bool
	fromCache  bool
	lastSync   time.Time
	lastReport time.Time
	lastErr    error
	lastErrAt  time.Time
	// credentialsRefused is State.CredentialsRefused.
	credentialsRefused bool
}

// State is what a Client knows of its sync and its reports.
type State struct {
	// Revision is the revision of the rule set in force; HasRules is
	// false while none is (nothing loaded yet, from the server or the
	// cache).
	Revision int64
	HasRules bool
	// FromCache is true while the set in force is the one read from
	// CacheDir at start, which the server has neither confirmed nor
	// replaced since.
	FromCache bool
	// LastSync is when the server last answered a snapshot request (a
	// new set or "not modified"); zero if never.
	LastSync time.Time
	// LastReport is when the server last accepted a report; zero if
	// never.
	LastReport time.Time
	// LastError is the latest failure (a request, a refused rule set, an
	// unreadable cache), with LastErrorAt; later successes do not clear
	// it: compare LastErrorAt with LastSync and LastReport.
	LastError   error
	LastErrorAt time.Time
	// CredentialsRefused is true while the server's last answer refused
	// the token (401) or what its role or scope allows (403): LastError is
	// then a *CredentialsError. The client keeps asking, as for a server
	// away, but only a new token will help.
	CredentialsRefused bool
	// BufferedMinutes is how many finished minutes wait for the server.
	BufferedMinutes int
	// DroppedMinutes counts the finished minutes dropped unsent: the
	// oldest when the buffer was full, and those the server refused as
	// malformed.
	DroppedMinutes int64
}

// New checks cfg and returns a Client with its engine, which has no rules
// until Start.
func New(cfg Config) (*Client, error) {
	return newClient(cfg, nil)
}

// newClient is New, or NewWith with hooks.
func newClient(cfg Config, hooks *Hooks) (*Client, error) {
	base, err := url.Parse(cfg.ServerURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("remote: ServerURL %q must be an http or https URL", cfg.ServerURL)
	}
	if !appPattern.MatchString(cfg.App) {
		return nil, fmt.Errorf("remote: App %q must match %s", cfg.App, appPattern)
	}
	cfg.PollWait = cmp.Or(cfg.PollWait, DefaultPollWait)
	cfg.ReportInterval = cmp.Or(cfg.ReportInterval, DefaultReportInterval)
	cfg.MaxBufferedMinutes = cmp.Or(cfg.MaxBufferedMinutes, DefaultMaxBufferedMinutes)
	cfg.MinuteSpread = max(cmp.Or(cfg.MinuteSpread, DefaultMinuteSpread), 0)
	cfg.MinBackoff = cmp.Or(cfg.MinBackoff, DefaultMinBackoff)
	cfg.MaxBackoff = max(cmp.Or(cfg.MaxBackoff, DefaultMaxBackoff), cfg.MinBackoff)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch {
	case cfg.PollWait < 0 || cfg.PollWait > MaxPollWait:
		return nil, fmt.Errorf("remote: PollWait %s must be between 0 and %s", cfg.PollWait, MaxPollWait)
	case cfg.ReportInterval < 0 || cfg.ReportInterval > time.Minute:
		return nil, fmt.Errorf("remote: ReportInterval %s must be between 0 and 1m", cfg.ReportInterval)
	case cfg.MinuteSpread > maxMinuteSpread:
		return nil, fmt.Errorf("remote: MinuteSpread %s must be at most %s", cfg.MinuteSpread, maxMinuteSpread)
	case cfg.MaxBufferedMinutes < 0 || cfg.MinBackoff < 0:
		return nil, errors.New("remote: MaxBufferedMinutes and MinBackoff must not be negative")
	}
	hostname, err := os.Hostname()
	if err != nil {
		hostname = "unknown"
	}
	pid := os.Getpid()
	if cfg.InstanceID == "" {
		cfg.InstanceID = fmt.Sprintf("%s-%d", hostname, pid)
	}
	c := &Client{
		cfg:      cfg,
		http:     cmp.Or(cfg.HTTPClient, &http.Client{}),
		logger:   cmp.Or(cfg.Logger, slog.Default()),
		hostname: hostname,
		pid:      pid,
		reports:  newReporter(cfg.MaxBufferedMinutes, spreadDelay(cfg.MinuteSpread)),
		ready:    make(chan struct{}),
	}
	api := strings.TrimRight(cfg.ServerURL, "/") + "/api/v1"
	c.snapshotURL = api + "/rules/snapshot?" + url.Values{
		"app": {cfg.App}, "wait": {cfg.PollWait.String()},
	}.Encode()
	c.reportURL = api + "/instances/report"
	if hooks != nil {
		c.load, c.stats = hooks.Load, hooks.Stats
		return c, nil
	}
	if c.cfg.Engine.Cluster == nil {
		c.cfg.Engine.Cluster = serverCount{c: c, url: api + "/cluster/exchange"}
		c.cfg.Engine.ClusterEngine = cfg.InstanceID
		c.cfg.Engine.ClusterTimeout = cmp.Or(c.cfg.Engine.ClusterTimeout, DefaultClusterTimeout)
	}
	c.engine = engine.New(c.cfg.Engine)
	c.load, c.stats = c.loadEngine, engineStats{c.engine}
	return c, nil
}

// Engine returns the engine the service calls Entry on. Its rules are the
// server's: rules loaded on it otherwise are replaced by the next
// snapshot. The Client is the one reader of its CollectMinutes. It is nil
// for a Client of NewWith.
func (c *Client) Engine() *engine.Engine { return c.engine }

// Ready is closed once a rule set is in force, from the server or from
// the cache: a service that must not take traffic unguarded waits for it
// (with a deadline of its own, since the server may be away).
func (c *Client) Ready() <-chan struct{} { return c.ready }

// Start loads the cached rule set, if CacheDir holds one, then syncs the
// rules and posts reports in the background until ctx ends or Close. It
// returns at once; an unreadable cache is logged and recorded in State,
// not returned.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started || c.closed {
		c.mu.Unlock()
		return errors.New("remote: Start called twice, or after Close")
	}
	c.started = true
	c.mu.Unlock()
	if err := c.loadCache(); err != nil {
		c.fail(err)
	}
	unsent, err := c.loadUnsent()
	if err != nil {
		c.fail(err)
	}
	c.reports.cycle.Lock()
	c.reports.unsent = unsent
	c.reports.cycle.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("remote: closed while starting")
	}
	ctx, c.cancel = context.WithCancel(ctx)
	c.loops.Go(func() { c.syncLoop(ctx) })
	c.loops.Go(func() { c.reportLoop(ctx) })
	return nil
}

// Close stops the sync and the reports, posts what the engine (or Stats) counted
// since the last report (the current minute so far included), closes the
// engine (traffic it counts afterwards is not reported) and the idle
// connections to the server. It returns
// that last report's error, if any. Safe to call more than once.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		cancel := c.cancel
		c.mu.Unlock()
		if cancel != nil {
			cancel()
			c.loops.Wait()
			ctx, stop := context.WithTimeout(context.Background(), closeReportTimeout)
			c.closeErr = c.flush(ctx)
			stop()
			if c.closeErr != nil {
				c.keepUnsent()
			}
		}
		if c.engine != nil {
			c.engine.Close()
		}
		// Nothing more is sent: a kept-alive connection would hold a
		// server that shuts down gracefully until its idle timeout.
		c.http.CloseIdleConnections()
	})
	return c.closeErr
}

// keepUnsent saves the minutes Close could not report for the next Client
// on the cache directory, or says they are lost.
func (c *Client) keepUnsent() {
	r := c.reports
	r.cycle.Lock()
	defer r.cycle.Unlock()
	minutes := r.batch(r.max)
	if err := c.saveUnsent(minutes); err != nil || c.cfg.CacheDir == "" {
		c.logger.Warn("sluice remote: closed with minutes unreported", "app", c.cfg.App, "minutes", len(minutes),
			"error", errors.Join(c.closeErr, err))
		return
	}
	c.logger.Warn("sluice remote: closed with minutes unreported, kept for the next start", "app", c.cfg.App,
		"minutes", len(minutes), "dir", c.cfg.CacheDir, "error", c.closeErr)
}

// State returns what the Client knows of its sync and reports now.
func (c *Client) State() State {
	buffered, dropped := c.reports.counts()
	c.mu.Lock()
	defer c.mu.Unlock()
	return State{
		Revision: c.revision, HasRules: c.hasRules, FromCache: c.fromCache,
		LastSync: c.lastSync, LastReport: c.lastReport,
		LastError: c.lastErr, LastErrorAt: c.lastErrAt, CredentialsRefused: c.credentialsRefused,
		BufferedMinutes: buffered, DroppedMinutes: dropped,
	}
}

// fail records err as the last error and logs it.
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(err)
}

// failLocked is fail for a caller holding mu.
func (c *Client) failLocked(err error) {
	c.lastErr, c.lastErrAt = err, c.cfg.Now()
	if _, ok := errors.AsType[*CredentialsError](err); ok {
		c.credentialsRefused = true
	}
	c.logger.Warn("sluice remote", "app", c.cfg.App, "error", err)
}

// authorize adds the bearer token to req.
func (c *Client) authorize(req *http.Request) {
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
}

// sleep waits for d, or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
