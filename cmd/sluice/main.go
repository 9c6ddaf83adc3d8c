package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/demo"
	"github.com/sluicehq/sluice/server/instances"
	"github.com/sluicehq/sluice/server/metrics"
	"github.com/sluicehq/sluice/store"
)

// version is the build's version, set with
// -ldflags "-X main.version=1.2.3".
var version = "dev"

// shutdownTimeout is how long requests in flight get to finish after
// SIGINT or SIGTERM.
const shutdownTimeout = 15 * time.Second

// passwordCost is the bcrypt cost of the passwords sluice hashes (the first
// admin's, and admin reset-password's); 0 is bcrypt.DefaultCost. The tests
// lower it, as a hash at the default cost takes a second of CPU under the
// race detector, on every start of a server.
var passwordCost int

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		code := 1
		var exit *exitError
		if errors.As(err, &exit) {
			code = exit.code
		}
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "sluice:", msg)
		}
		os.Exit(code)
	}
}

// run is the whole program minus the process: it returns when ctx is done
// (the server then shut down cleanly) or when something fails.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	command, args := splitCommand(args)
	err := dispatch(ctx, command, args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the flag set printed the usage
	}
	return err
}

func dispatch(ctx context.Context, command string, args []string, stdout, stderr io.Writer) error {
	switch command {
	case "serve":
		return serve(ctx, args, stdout, stderr)
	case "demo":
		return serve(ctx, append([]string{"--demo"}, args...), stdout, stderr)
	case "rules":
		return rulesCommand(ctx, args, stdout, stderr)
	case "admin":
		return admin(ctx, args, stdout, stderr)
	case "help":
		return help(ctx, args, stdout, stderr)
	default:
		fmt.Fprint(stderr, programUsage)
		return fmt.Errorf("unknown command %q", command)
	}
}

// splitCommand takes the subcommand off args; without one, sluice serves.
func splitCommand(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "serve", args
}

// serveUsage is the program's usage: serve is the default command.
const serveUsage = programUsage + "\nFlags of serve and demo:\n"

// serve runs the server until ctx is done, then closes the server, the
// engine and the store, in that order.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	addr := fs.String("addr", ":8080", "address to listen on, host:port (env SLUICE_ADDR)")
	grpcAddr := fs.String("grpc-addr", "", "address of the gRPC listener of Envoy's rate limit service, host:port; off unless set (env SLUICE_GRPC_ADDR)")
	pprofAddr := fs.String("pprof-addr", "", "loopback address of a listener serving Go's profiles (/debug/pprof/), host:port; off unless set (env SLUICE_PPROF_ADDR)")
	dbPath := fs.String("db", "./sluice.db", "SQLite database file, created if missing, a URI filename (file:path?param=value), or a PostgreSQL URL (postgres://…) (env SLUICE_DB)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error (env SLUICE_LOG_LEVEL)")
	retention := retentionFlag(metrics.DefaultRetention)
	fs.Var(&retention, "metrics-retention", "how long metric history is kept: days (30d) or a Go duration (env SLUICE_METRICS_RETENTION)")
	flushInterval := fs.Duration("metrics-flush-interval", metrics.DefaultFlushInterval, "how often metrics are written to the database; a crash loses at most this much (env SLUICE_METRICS_FLUSH_INTERVAL)")
	publicMetrics := fs.Bool("public-metrics", false, "serve the Prometheus /metrics without credentials (env SLUICE_PUBLIC_METRICS)")
	entryLease := fs.Duration("entry-lease", server.DefaultEntryLease, "how long the check API holds a concurrency entry that is never completed before releasing it as an error (env SLUICE_ENTRY_LEASE)")
	maxResources := fs.Int("max-resources", engine.DefaultMaxResources, "how many resources the engine tracks at most, rules' resources aside; past it, calls on new ones are counted under (overflow) (env SLUICE_MAX_RESOURCES)")
	maxInstances := fs.Int("max-instances", instances.DefaultMaxInstances, "how many instances may have reported in the last 5 minutes; past it, a report of a new instance id is refused (env SLUICE_MAX_INSTANCES)")
	idleTTL := fs.Duration("resource-idle-ttl", engine.DefaultResourceIdleTTL, "how long a resource no rule names may go without traffic before the engine forgets it; its history stays (env SLUICE_RESOURCE_IDLE_TTL)")
	demoFlag := fs.Bool("demo", false, "seed demo rules (named demo-…) and drive synthetic traffic through them; 'sluice demo' is the same (env SLUICE_DEMO)")
	bootstrapToken := fs.String("bootstrap-token", "", "register this value as an admin API token at start-up (env SLUICE_BOOTSTRAP_TOKEN)")
	instanceToken := fs.String("instance-token", "", "register this value as an API token of role instance at start-up, for the services that embed the engine (env SLUICE_INSTANCE_TOKEN)")
	adminPassword := fs.String("admin-password", "", "password of the first admin on an empty database; random and logged once if unset (env SLUICE_ADMIN_PASSWORD)")
	redisURL := fs.String("redis", "", "Redis URL (redis://[user:password@]host:port/db) holding the count that scope cluster rules share across every replica and instance; without it such rules are refused (env SLUICE_REDIS)")
	tlsCert := fs.String("tls-cert", "", "TLS certificate file (PEM); with --tls-key, serve HTTPS (env SLUICE_TLS_CERT)")
	tlsKey := fs.String("tls-key", "", "TLS private key file (PEM) (env SLUICE_TLS_KEY)")
	webhookAllowPrivate := fs.Bool("webhook-allow-private", false, "let webhook endpoints have URLs on loopback, link-local (cloud metadata), private and other internal addresses, and deliveries connect to them (env SLUICE_WEBHOOK_ALLOW_PRIVATE)")
	webhookRetention := retentionFlag(server.DefaultWebhookRetention)
	fs.Var(&webhookRetention, "webhook-retention", "how long delivered and failed webhook deliveries are kept: days (7d) or a Go duration (env SLUICE_WEBHOOK_RETENTION)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := parseFlags(fs, args, serveUsage, stdout, stderr); err != nil {
		return err
	}
	if *showVersion {
		_, err := fmt.Fprintln(stdout, version)
		return err
	}
	level, err := parseLevel(*logLevel)
	if err != nil {
		return err
	}
	if *flushInterval <= 0 {
		return fmt.Errorf("--metrics-flush-interval %v: must be more than zero", *flushInterval)
	}
	if *entryLease <= 0 {
		return fmt.Errorf("--entry-lease %v: must be more than zero", *entryLease)
	}
	if *maxResources < 1 {
		return fmt.Errorf("--max-resources %d: must be at least 1", *maxResources)
	}
	if *maxInstances < 1 {
		return fmt.Errorf("--max-instances %d: must be at least 1", *maxInstances)
	}
	if *idleTTL <= 0 {
		return fmt.Errorf("--resource-idle-ttl %v: must be more than zero", *idleTTL)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if (*tlsCert == "") != (*tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	useTLS := *tlsCert != ""

	// The address first: a start that cannot listen must not migrate a
	// database, nor create its first user and print a password for it.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	defer ln.Close() // a second close, after Serve's, is harmless

	var grpcLn net.Listener // nil without --grpc-addr
	if *grpcAddr != "" {
		if grpcLn, err = net.Listen("tcp", *grpcAddr); err != nil {
			return fmt.Errorf("listen on %s: %w", *grpcAddr, err)
		}
		defer grpcLn.Close()
	}

	if *pprofAddr != "" {
		pprofLn, err := listenPprof(*pprofAddr)
		if err != nil {
			return err
		}
		defer pprofServer(pprofLn, logger).Close()
	}

	st, err := store.Open(ctx, *dbPath, logger, store.Exclusive())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	counter, err := clusterCounter(ctx, *redisURL, logger)
	if err != nil {
		return err
	}
	if counter != nil {
		defer counter.Close()
	}
	breakers := server.NewBreakerFeed()
	clusterFeed := server.NewClusterFeed()
	engineOpts := engine.Options{
		OnBreakerStateChange: breakers.Notify, MaxResources: *maxResources, ResourceIdleTTL: *idleTTL,
	}
	if counter != nil {
		engineOpts.Cluster, engineOpts.ClusterEngine = counter, replicaID()
		logState := logClusterState(logger)
		engineOpts.OnClusterStateChange = func(c engine.ClusterStateChange) {
			logState(c)
			clusterFeed.Notify(c)
		}
	}
	// Closed before the counter, so that it returns what its leases left.
	eng := engine.New(engineOpts)
	defer eng.Close()

	demoFleetToken := *instanceToken
	if *demoFlag && demoFleetToken == "" {
		demoFleetToken = "slc_demo_" + rand.Text()
	}
	srv, err := server.New(ctx, server.Config{
		Engine: eng, Store: st, Version: version, Logger: logger,
		MetricsFlushInterval: *flushInterval, MetricsRetention: time.Duration(retention), PublicMetrics: *publicMetrics,
		EntryLease: *entryLease, BreakerFeed: breakers, ClusterFeed: clusterFeed,
		BootstrapToken: *bootstrapToken, InstanceToken: demoFleetToken, AdminPassword: *adminPassword, TLS: useTLS,
		Cluster: engineOpts.Cluster, MaxInstances: *maxInstances, QuotaNode: quotaNode(*addr),
		WebhookAllowPrivate: *webhookAllowPrivate, WebhookRetention: time.Duration(webhookRetention),
		PasswordCost: passwordCost,
	})
	if err != nil {
		return err
	}
	var demoRun *demo.Traffic // nil without --demo
	var demoFleet *demo.Fleet // nil without --demo, and with TLS
	if *demoFlag {
		if demoRun, err = demo.Start(ctx, srv.Rules(), eng, logger); err != nil {
			return errors.Join(err, ln.Close(), srv.Shutdown(ctx))
		}
		defer demoRun.Close()
	}
	served := make(chan error, 1)
	go func() {
		if useTLS {
			served <- srv.ServeTLS(ln, *tlsCert, *tlsKey)
			return
		}
		served <- srv.Serve(ln)
	}()
	var grpcServed chan error // nil without --grpc-addr: never ready
	if grpcLn != nil {
		grpcServed = make(chan error, 1)
		go func() { grpcServed <- srv.ServeGRPC(grpcLn, *tlsCert, *tlsKey) }()
	}
	switch {
	case *demoFlag && useTLS:
		logger.Info("demo: no demo instances over HTTPS: they would have to trust the server's certificate")
	case *demoFlag:
		if demoFleet, err = demo.StartFleet("http://"+loopback(ln.Addr()), demoFleetToken, logger); err != nil {
			logger.Error("demo: the demo instances did not start", "error", err)
		}
		defer demoFleet.Close()
	}

	var grpcErr error
	select {
	case err := <-served:
		if err == nil {
			err = errors.New("server stopped unexpectedly")
		}
		return err
	case grpcErr = <-grpcServed:
		// The HTTP server is shut down as on a signal, then the error told.
		if grpcErr == nil {
			grpcErr = errors.New("the gRPC server stopped unexpectedly")
		}
	case <-ctx.Done():
	}

	logger.Info("shutting down", "timeout", shutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	// The demo's calls stop, and its instances report their last minute,
	// before the final flush counts them all.
	demoRun.Close()
	if err := demoFleet.Close(); err != nil {
		logger.Warn("demo: the demo instances did not report their last minute", "error", err)
	}
	err = srv.Shutdown(shutdownCtx)
	if grpcServed != nil && grpcErr == nil {
		grpcErr = <-grpcServed
	}
	return errors.Join(grpcErr, err, <-served)
}

// loopback is addr with an unspecified host (":8080") made the loopback
// address, for clients in the process itself.
func loopback(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}

// parseLevel accepts exactly the four names the --log-level flag documents.
func parseLevel(name string) (slog.Level, error) {
	switch strings.ToLower(name) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", name)
}
