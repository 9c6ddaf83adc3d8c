package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/helmet"
	fiberrecover "github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/gofiber/swagger"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicehq/sluice/docs"
	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/check"
	"github.com/sluicehq/sluice/server/demo"
	"github.com/sluicehq/sluice/server/impact"
	"github.com/sluicehq/sluice/server/instances"
	"github.com/sluicehq/sluice/server/metrics"
	"github.com/sluicehq/sluice/server/quota"
	"github.com/sluicehq/sluice/server/rls"
	"github.com/sluicehq/sluice/server/rules"
	"github.com/sluicehq/sluice/server/webhook"
	"github.com/sluicehq/sluice/store"
)

const (
	// apiPrefix is where the REST API's routes live.
	apiPrefix = "/api/v1"
	// readTimeout bounds reading one request, headers and body.
	readTimeout = 30 * time.Second
	// idleTimeout closes keep-alive connections left unused this long.
	idleTimeout = 2 * time.Minute
	// hstsMaxAgeSec is the Strict-Transport-Security max-age sent over
	// HTTPS: a year.
	hstsMaxAgeSec = 365 * 24 * 3600
)

// Config is what New needs. The server uses Engine and Store but does not
// own them: the caller closes them after Shutdown.
type Config struct {
	// Engine is the flow-control engine every door shares. Required.
	Engine *engine.Engine
	// Store is the database. Required.
	Store *store.Store
	// Version is the build's version, reported by the health endpoint.
	// Optional. Default: "dev".
	Version string
	// Logger receives request and error logs. Optional. Default:
	// slog.Default().
	Logger *slog.Logger
	// MetricsFlushInterval is how often the minute figures are written to
	// the store; a crash loses at most this much. Optional. Default:
	// metrics.DefaultFlushInterval (10s).
	MetricsFlushInterval time.Duration
	// MetricsRetention is how long metric history is kept. Optional.
	// Default: metrics.DefaultRetention (30 days).
	MetricsRetention time.Duration
	// PublicMetrics lets GET /metrics (Prometheus) answer without
	// credentials; without it the auth layer asks for a bearer token
	// there. Optional. Default: false.
	PublicMetrics bool
	// BreakerFeed brings the engine's circuit breaker transitions to the
	// metric stream; see NewBreakerFeed. Optional. Default: none (the
	// stream sends no breaker events).
	BreakerFeed *BreakerFeed
	// EntryLease is how long the check API holds an entry a concurrency
	// rule counts before it releases it as an error, if the client never
	// completes it. Optional. Default: DefaultEntryLease (30s).
	EntryLease time.Duration
	// UnguardedAPI leaves the /api/v1 routes out of the engine, so that
	// the API's own traffic is not counted as resources. Optional.
	// Default: false: every route but health is a guarded resource.
	UnguardedAPI bool
	// BootstrapToken, when set, is registered at start-up as an admin API
	// token named "bootstrap" (again at every start: idempotent).
	// Optional.
	BootstrapToken string
	// InstanceToken, when set, is registered at start-up as an API token
	// of role instance named "instances", for a fleet deployed with a
	// fixed secret: it may read the rule snapshot and post reports only.
	// Optional.
	InstanceToken string
	// AdminPassword is the password of the user admin created on a
	// database with no user. Optional. Default: a random password, logged
	// once.
	AdminPassword string
	// TLS tells that clients reach the server over HTTPS, so the session
	// cookie is marked Secure. Optional.
	TLS bool
	// SessionIdle and SessionMax end a console session after that long
	// unused, and that long after login. Optional. Defaults: 2h and 24h.
	SessionIdle, SessionMax time.Duration
	// PasswordCost is bcrypt's cost for passwords. Optional. Default:
	// bcrypt.DefaultCost.
	PasswordCost int
	// Now tells the time for sessions, tokens, login throttling and the
	// instances' reports and states. Optional. Default: time.Now, in UTC.
	Now func() time.Time
	// MaxInstances bounds the instances that may have reported within 5
	// minutes (not gone): past it, a report of a new id is refused, so a
	// leaked instance token cannot grow the registry without end.
	// Optional. Default: instances.DefaultMaxInstances.
	MaxInstances int
	// Cluster is the count in Redis that scope cluster rules share (the
	// engine's Options.Cluster too): the instances lease from it through
	// POST /cluster/exchange. Optional. Default: none; instances' exchanges
	// are answered 409.
	Cluster engine.ClusterCounter
	// QuotaNode names this server's saved quota windows (server/quota):
	// a server restarted with the same name continues its hour and day
	// quotas. Replicas sharing a database need names of their own.
	// Optional. Default: the host's name.
	QuotaNode string
	// QuotaSaveInterval is how often the quota windows are saved: what a
	// crash may forget. Optional. Default: quota.DefaultSaveInterval (5s).
	QuotaSaveInterval time.Duration
	// WebhookAllowPrivate lets webhook endpoints have URLs on loopback,
	// link-local, private and other internal addresses, and deliveries
	// connect to them (--webhook-allow-private): tests set it to reach
	// their receiver on 127.0.0.1. Optional. Default: false.
	WebhookAllowPrivate bool
	// ClusterFeed brings the engine's cluster state changes to the
	// webhooks; see NewClusterFeed. Optional. Default: none (no cluster
	// events).
	ClusterFeed *ClusterFeed
	// InstanceWatchInterval is how often the instances' states are
	// compared with those last announced to the webhooks (instance.stale,
	// instance.gone, instance.back). Optional. Default:
	// DefaultInstanceWatchInterval (5s).
	InstanceWatchInterval time.Duration
	// BlockRateInterval is how often the endpoints' block-rate conditions
	// (resource.blockRate) are evaluated. Optional. Default:
	// DefaultBlockRateInterval (30s).
	BlockRateInterval time.Duration
	// Webhook tunes the webhook delivery worker (its polling, timeout,
	// backoff, retry period and pausing; docs/webhooks.md). Its Store,
	// Logger and AllowPrivate are the server's. Optional. Default: the
	// worker's defaults.
	Webhook webhook.Options
	// WebhookRetention is how long delivered and failed webhook
	// deliveries are kept, pruned by the metrics' retention job. Optional.
	// Default: DefaultWebhookRetention (7 days).
	WebhookRetention time.Duration
}

// DefaultWebhookRetention is Config.WebhookRetention's default.
const DefaultWebhookRetention = 7 * 24 * time.Hour

// Server is the HTTP control plane. Create it with New, run it with Listen
// or Serve and stop it with Shutdown.
type Server struct {
	app     *fiber.App
	engine  *engine.Engine
	store   *store.Store
	rules   *rules.Service
	auth    *auth
	version string
	logger  *slog.Logger

	metrics       *metrics.Pipeline
	stream        *streamHub
	publicMetrics bool
	instances     *instances.Registry
	cluster       engine.ClusterCounter
	quotaNode     string
	quotas        *quota.Keeper // saves the quota windows
	spec          []byte        // the OpenAPI document served (serveSpec)
	webhooks      *webhook.Worker
	// stopClusterRelay ends the relay of Config.ClusterFeed; nil without one.
	stopClusterRelay func()
	// stopInstanceWatch ends the watch of the instances' states, and
	// stopBlockRateWatch that of the block rates.
	stopInstanceWatch, stopBlockRateWatch func()
	// closing is closed by Shutdown: held snapshot requests answer then.
	closing chan struct{}

	entries        *check.Entries // the check API's held entries
	fixedPaths     fixedPaths     // the methods of each API path without parameters
	ruleFileRoutes ruleFileRoutes // the routes that read large bodies themselves
	unguardedAPI   bool

	// follow ends the replication listener (follow.go); followed is
	// closed when it has returned.
	follow   context.CancelFunc
	followed chan struct{}

	mu          sync.Mutex
	listeners   []net.Listener
	grpcServers []*rls.Server // ServeGRPC's
	stopped     bool
}

// Rules is the rule domain the server writes through, for programs that
// seed rules of their own (sluice --demo) the way the API writes them.
func (s *Server) Rules() *rules.Service { return s.rules }

// New builds the application and its routes and loads the stored rules into
// the engine; it does not listen yet.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Engine == nil {
		return nil, errors.New("server: Config.Engine is required")
	}
	if cfg.Store == nil {
		return nil, errors.New("server: Config.Store is required")
	}
	s := &Server{
		engine:  cfg.Engine,
		store:   cfg.Store,
		version: cfg.Version,
		logger:  cfg.Logger,
	}
	if s.version == "" {
		s.version = "dev"
	}
	spec, err := specOf(s.version)
	if err != nil {
		return nil, fmt.Errorf("server: the OpenAPI document: %w", err)
	}
	s.spec = spec
	if s.logger == nil {
		s.logger = slog.Default()
	}
	s.quotaNode = cfg.QuotaNode
	if s.quotaNode == "" {
		s.quotaNode, _ = os.Hostname()
	}
	savedQuotas, err := quota.Restore(ctx, cfg.Engine, cfg.Store, s.quotaNode)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.rules = rules.New(cfg.Store, cfg.Engine)
	if err := s.rules.Load(ctx); err != nil {
		return nil, fmt.Errorf("server: load the stored rules into the engine: %w", err)
	}
	authCfg := authConfig{
		secureCookies: cfg.TLS, sessionIdle: cfg.SessionIdle, sessionMax: cfg.SessionMax,
		bcryptCost: cfg.PasswordCost, now: cfg.Now,
	}
	if authCfg.sessionIdle <= 0 {
		authCfg.sessionIdle = defaultSessionIdle
	}
	if authCfg.sessionMax <= 0 {
		authCfg.sessionMax = defaultSessionMax
	}
	if authCfg.bcryptCost == 0 {
		authCfg.bcryptCost = bcrypt.DefaultCost
	}
	if authCfg.now == nil {
		authCfg.now = func() time.Time { return time.Now().UTC() }
	}
	s.auth = newAuth(cfg.Store, s.logger, authCfg)
	if err := s.auth.start(ctx, cfg.AdminPassword, cfg.BootstrapToken, cfg.InstanceToken); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.app = fiber.New(fiber.Config{
		AppName:      "sluice",
		ErrorHandler: s.handleError,
		BodyLimit:    maxRuleFileBytes,
		// Bodies are read by limitBody and readBody, route by route,
		// once the caller is known; fasthttp would otherwise read them
		// whole before any handler runs.
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		ReadTimeout:                  readTimeout,
		IdleTimeout:                  idleTimeout,
		DisableStartupMessage:        true,
		// Request strings reach the engine and goroutines that outlive
		// the handler, and Fiber recycles its buffers after it returns.
		Immutable:   true,
		JSONEncoder: marshalJSON,
		// A path has one spelling (docs/api.md): /api/v1/Tokens or
		// /api/v1/tokens/ reach no route, rather than the /tokens one.
		CaseSensitive: true,
		StrictRouting: true,
	})
	hookOpts := cfg.Webhook
	hookOpts.Store, hookOpts.Logger, hookOpts.AllowPrivate = cfg.Store, s.logger, cfg.WebhookAllowPrivate
	s.webhooks = webhook.New(hookOpts)
	webhookRetention := cmp.Or(cfg.WebhookRetention, DefaultWebhookRetention)
	s.metrics = metrics.New(metrics.Options{
		Engine: cfg.Engine, Store: cfg.Store, Logger: s.logger,
		FlushInterval: cfg.MetricsFlushInterval, Retention: cfg.MetricsRetention,
		Purge: func(ctx context.Context) error {
			_, err := cfg.Store.PruneWebhookDeliveries(ctx, authCfg.now().Add(-webhookRetention).UnixMilli())
			return errors.Join(s.auth.purgeSessions(ctx), err)
		},
		OnOverflow: publishOverflow(cfg.Engine, cfg.Store, authCfg.now, s.logger),
	})
	s.instances = instances.New(instances.Options{Store: cfg.Store, Now: authCfg.now, MaxInstances: cfg.MaxInstances, Logger: s.logger})
	s.metrics.MustRegister(s.instances.Collector())
	s.closing = make(chan struct{})
	s.stream = newStreamHub(s.metrics, streamInterval)
	if cfg.BreakerFeed != nil {
		s.stream.relayBreakers(cfg.BreakerFeed, cfg.Store, s.logger)
	}
	if cfg.ClusterFeed != nil {
		s.stopClusterRelay = relayClusterChanges(cfg.ClusterFeed, cfg.Engine, cfg.Store, s.logger)
	}
	s.stopBlockRateWatch = watchBlockRates(cfg.Store, cmp.Or(cfg.BlockRateInterval, DefaultBlockRateInterval), authCfg.now, s.logger)
	s.stopInstanceWatch = watchInstanceStates(s.instances, cfg.Store, cmp.Or(cfg.InstanceWatchInterval, DefaultInstanceWatchInterval), s.logger)
	s.publicMetrics = cfg.PublicMetrics
	s.cluster = cfg.Cluster
	s.entries = check.StartEntries(cfg.Engine.Clock(), cmp.Or(cfg.EntryLease, DefaultEntryLease))
	s.unguardedAPI = cfg.UnguardedAPI
	s.fixedPaths, s.ruleFileRoutes = fixedPaths{}, ruleFileRoutes{}
	s.routes(cfg.WebhookAllowPrivate, authCfg.now)
	s.metrics.Start()
	s.webhooks.Start()
	s.quotas = quota.Start(cfg.Engine, cfg.Store, s.quotaNode, savedQuotas, cfg.QuotaSaveInterval, s.logger)
	s.startFollowing()
	return s, nil
}

// routes mounts every route. The console comes last: it answers whatever
// the API and the Swagger UI did not.
func (s *Server) routes(webhookAllowPrivate bool, now func() time.Time) {
	apiGuard := s.guard()
	// The check API's routes come first, ahead of the middlewares below,
	// which their requests never cross: services call them many times a
	// second, and serveTraffic does the middlewares' work in one call.
	traffic := apiRoutes{router: s.app.Group(apiPrefix), first: s.serveTraffic, guard: apiGuard, fixed: s.fixedPaths}
	bindCheck(traffic, &checkHandler{api: check.New(s.engine, s.entries)})

	s.app.Use(s.logRequests)
	s.app.Use(helmet.New(helmet.Config{HSTSMaxAge: hstsMaxAgeSec}))
	s.app.Use(s.limitBody)
	s.app.Use(fiberrecover.New(fiberrecover.Config{
		EnableStackTrace:  true,
		StackTraceHandler: s.logPanic,
	}))

	group := s.app.Group(apiPrefix, s.auth.middleware)
	// Health and logging in and out are never guarded by the engine:
	// health stays cheap, and no rule can lock anyone out of logging in.
	bindHealth(group, s.store, s.version, s.logger)
	account := &accountHandler{auth: s.auth}
	bindLogin(group, account)
	// Every other API route is guarded by the engine.
	api := apiRoutes{router: group, guard: apiGuard, fixed: s.fixedPaths, ruleFiles: s.ruleFileRoutes}
	bindAccount(api, account)
	bindUsers(api, &userHandler{auth: s.auth})
	bindTokens(api, &tokenHandler{auth: s.auth})
	bindSnapshot(api, &snapshotHandler{rules: s.rules, closing: s.closing})
	bindRules(api, &ruleHandler{rules: s.rules,
		demo:   DemoMarks{NamePrefix: demo.NamePrefix, DescriptionPrefix: demo.DescriptionPrefix},
		impact: &impact.Estimator{Source: s.store, NowMs: s.metrics.NowMs}})
	bindInstances(api, newInstanceHandler(s.instances, s.metrics, s.logger))
	bindBreakers(api, &breakerHandler{engine: s.engine, store: s.store})
	bindResources(api, &resourceHandler{metrics: s.metrics})
	bindHotValues(api, &hotValuesHandler{engine: s.engine, metrics: s.metrics})
	bindCluster(api, &clusterHandler{counter: s.cluster, engine: s.engine, rules: s.rules, instances: s.instances, logger: s.logger})
	bindMetrics(api, &metricsHandler{metrics: s.metrics, stream: s.stream})
	bindWebhooks(api, &webhookHandler{store: s.store, worker: s.webhooks, allowPrivate: webhookAllowPrivate, resolver: net.DefaultResolver, now: now})
	guard := s.auth.requireCredentials
	if s.publicMetrics {
		guard = func(c *fiber.Ctx) error { return c.Next() }
	}
	bindPrometheus(s.app, &prometheusHandler{metrics: s.metrics}, guard)

	s.app.Get("/swagger/doc.json", s.serveSpec)
	s.app.Get("/swagger/*", swagger.New())
	bindConsole(s.app)
}

// logRequests logs one line per request, at debug level when it succeeded
// and at info level when it did not. It writes error answers itself so that
// the status it logs is the one sent.
func (s *Server) logRequests(c *fiber.Ctx) error {
	// Read before the handlers run: some rewrite the path they route on.
	method, path := c.Method(), c.Path()
	if err := c.Next(); err != nil {
		if err := s.handleError(c, err); err != nil {
			return err
		}
	}
	s.logRequest(c, method, path)
	return nil
}

// logRequest writes logRequests' line for an answered request.
func (s *Server) logRequest(c *fiber.Ctx, method, path string) {
	status := c.Response().StatusCode()
	level := slog.LevelDebug
	if status >= http.StatusBadRequest {
		level = slog.LevelInfo
	}
	// Asked first, the logger costs a request nothing at a level it drops:
	// the arguments below would be built before Log could drop them.
	if !s.logger.Enabled(c.UserContext(), level) {
		return
	}
	s.logger.Log(c.UserContext(), level, "request",
		"method", method,
		"path", path,
		"status", status,
		// fasthttp notes when it called the handler: no clock read on a
		// request that is not logged.
		"duration", time.Since(c.Context().Time()),
		"ip", c.IP(),
	)
}

// serveTraffic is the first handler of the check API's routes, which are
// bound ahead of the middlewares every other request crosses (routes): it
// does their work in one call. It logs the request (logRequests), refuses
// a compressed body and reads the body up to maxBodyBytes (limitBody),
// turns a panic into a 500 (fiberrecover) and authenticates (auth.middleware);
// the route's role check and the engine's guard come after it. It sends
// none of helmet's headers: services call these routes and browsers never,
// and the browser-only headers would be a fifth of such an answer's cost.
func (s *Server) serveTraffic(c *fiber.Ctx) error {
	if err := s.admitTraffic(c); err != nil {
		if err := s.handleError(c, err); err != nil {
			return err
		}
	}
	s.logRequest(c, c.Method(), c.Path())
	return nil
}

// admitTraffic is serveTraffic's body, its panics recovered as
// fiberrecover.New recovers them.
func (s *Server) admitTraffic(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logPanic(c, r)
			var ok bool
			if err, ok = r.(error); !ok {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	if err := refuseEncoded(c); err != nil {
		return err
	}
	if err := readBodyUpTo(c, maxBodyBytes); err != nil {
		return err
	}
	if err := s.auth.admit(c); err != nil {
		return err
	}
	return c.Next()
}

// serveSpec answers the OpenAPI document committed in docs/, the one the
// Swagger UI (swagger/index.html) loads, its info.version the server's.
func (s *Server) serveSpec(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(s.spec)
}

// specOf is the committed OpenAPI document with info.version set to
// version: a client generated from it says which server it was made
// against.
func specOf(version string) ([]byte, error) {
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(docs.JSON, &spec); err != nil {
		return nil, err
	}
	var info map[string]any
	if err := json.Unmarshal(spec["info"], &info); err != nil {
		return nil, err
	}
	info["version"] = version
	raw, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	spec["info"] = raw
	return json.MarshalIndent(spec, "", "    ")
}

// writeJSON answers v as JSON with status.
func writeJSON(c *fiber.Ctx, status int, v any) error {
	return c.Status(status).JSON(v, fiber.MIMEApplicationJSONCharsetUTF8)
}

// marshalJSON encodes like encoding/json without escaping <, > and &:
// API clients are not HTML pages, and "must be >= 0" should read as such.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// logPanic logs a recovered panic with its stack; the error handler then
// answers 500 without either.
func (s *Server) logPanic(c *fiber.Ctx, recovered any) {
	s.logger.ErrorContext(c.UserContext(), "panic while handling a request",
		"method", c.Method(),
		"path", c.Path(),
		"panic", fmt.Sprint(recovered),
		"stack", string(debug.Stack()),
	)
}

// ServeTLS is Serve over HTTPS with the PEM certificate and key files, on
// a listener the caller opened (the binary's, a test's). It closes ln when
// it returns.
func (s *Server) ServeTLS(ln net.Listener, certFile, keyFile string) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return errors.Join(fmt.Errorf("load the TLS certificate: %w", err), ln.Close())
	}
	return s.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
}

// Serve answers requests on ln until Shutdown, and returns nil then. It
// closes ln when it returns.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return ln.Close()
	}
	s.listeners = append(s.listeners, ln)
	s.mu.Unlock()

	s.logger.Info("listening", "addr", ln.Addr().String(), "version", s.version)
	return s.app.Listener(ln)
}

// Shutdown stops accepting connections, HTTP and gRPC, and waits until the
// requests in flight are answered or ctx is done. Serve and ServeGRPC calls
// that have not started yet return at once. It then stops the metric jobs and flushes every figure
// not written yet, the current partial minute included.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.stopped {
		close(s.closing)
	}
	s.stopped = true
	listeners, grpcServers := s.listeners, s.grpcServers
	s.mu.Unlock()

	// Event streams never end by themselves, and held snapshot requests
	// only after their wait: end them (closing, above), or Fiber would
	// wait for them.
	s.stream.close()
	// The gRPC listeners stop alongside, each call in flight answered.
	var grpcStopped sync.WaitGroup
	for _, g := range grpcServers {
		grpcStopped.Go(func() { g.Stop(ctx) })
	}
	err := s.app.ShutdownWithContext(ctx)
	grpcStopped.Wait()
	// The reports answered, their instances' records written behind them
	// are to be stored before the store is closed.
	s.instances.Wait()
	// A Serve that had not handed its listener to Fiber yet is not stopped
	// by Fiber; closing the listener stops it.
	for _, ln := range listeners {
		if cerr := ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, cerr)
		}
	}
	s.entries.Close()
	if s.stopClusterRelay != nil {
		s.stopClusterRelay()
	}
	s.stopInstanceWatch()
	s.stopBlockRateWatch()
	s.webhooks.Stop()
	s.follow()
	<-s.followed
	// The requests answered, nothing more is counted: flush it all.
	s.metrics.Stop()
	return errors.Join(err, s.metrics.FinalFlush(ctx), s.quotas.Stop(ctx))
}
