package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/engine/remote"
	"github.com/sluicehq/sluice/server/demo/shop"
)

// version is the service's version, shown in the server's instance list.
const version = "1.0.0"

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-example:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	addr, server, token, app, cacheDir, instanceID string
	traffic                                        float64
	// capacity and searchMs shape GET /search's backend; searchClients
	// call it in a closed loop.
	capacity, searchMs, searchClients int64
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("sluice-example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8090", "address to serve on")
	fs.StringVar(&cfg.server, "server", cmp.Or(os.Getenv("SLUICE_SERVER"), "http://127.0.0.1:8080"), "the Sluice server (default $SLUICE_SERVER)")
	fs.StringVar(&cfg.token, "token", os.Getenv("SLUICE_TOKEN"), "an API token of role instance (default $SLUICE_TOKEN)")
	fs.StringVar(&cfg.app, "app", "shop", "the app whose rules this service runs")
	fs.StringVar(&cfg.cacheDir, "cache-dir", "", "where the last good rules are kept (default: the user cache directory)")
	fs.StringVar(&cfg.instanceID, "instance-id", "", "this process's id in the instance list (default: hostname-pid)")
	fs.Float64Var(&cfg.traffic, "traffic", 0, "calls a second the service sends to its own routes")
	fs.Int64Var(&cfg.capacity, "capacity", 20, "calls GET /search serves at once before they queue (PUT /sluice/capacity?calls=N changes it)")
	fs.Int64Var(&cfg.searchMs, "search-ms", 50, "how long a GET /search call takes within its capacity, in milliseconds")
	fs.Int64Var(&cfg.searchClients, "search-clients", 0, "clients the service runs that call its GET /search in a closed loop")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.traffic < 0 {
		return cfg, errors.New("-traffic must not be negative")
	}
	if cfg.capacity < 1 || cfg.searchMs < 1 || cfg.searchClients < 0 {
		return cfg, errors.New("-capacity and -search-ms must be at least 1, -search-clients not negative")
	}
	if cfg.cacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return cfg, fmt.Errorf("no -cache-dir and no user cache directory: %w", err)
		}
		cfg.cacheDir = filepath.Join(dir, "sluice-example", cfg.app)
	}
	return cfg, nil
}

func run(args []string, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if err := os.MkdirAll(cfg.cacheDir, 0o700); err != nil {
		return err
	}
	client, err := remote.New(remote.Config{
		ServerURL: cfg.server, Token: cfg.token, App: cfg.app, CacheDir: cfg.cacheDir,
		InstanceID: cfg.instanceID, Version: version, Logger: logger,
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := client.Start(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		client.Close()
		return err
	}
	backend := &searchBackend{baseMs: cfg.searchMs}
	backend.capacity.Store(cfg.capacity)
	mux := http.NewServeMux()
	mux.Handle("/", shop.Handler(client))
	searchRoutes := backend.handler(client.Engine())
	mux.Handle("GET /search", searchRoutes)
	mux.Handle("PUT /sluice/capacity", searchRoutes)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	logger.Info("serving", "addr", ln.Addr().String(), "app", cfg.app, "server", cfg.server)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if cfg.traffic > 0 {
		go shop.Drive(ctx, "http://"+ln.Addr().String(), cfg.traffic)
	}
	if cfg.searchClients > 0 {
		driveSearch(ctx, "http://"+ln.Addr().String(), int(cfg.searchClients))
	}
	select {
	case err = <-served:
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(shutdown)
		cancel()
	}
	// Close posts the current minute, so a stopped instance's traffic is
	// in the history too.
	return errors.Join(err, client.Close())
}
