package servertest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// AdminToken is the token Do sends as the bootstrap admin: the callback of
// Start registers it (server.Config.BootstrapToken).
const AdminToken = "servertest-admin-token"

// stopTimeout bounds a graceful stop: requests in flight and the last
// metric flush.
const stopTimeout = 10 * time.Second

// Server is what Start runs: *server.Server satisfies it.
type Server interface {
	// Serve answers on ln until Shutdown, and returns nil then.
	Serve(ln net.Listener) error
	// Shutdown stops the server gracefully.
	Shutdown(ctx context.Context) error
}

// Env is what the callback of Start builds its server from.
type Env struct {
	// Store is open on the test's SQLite file, with the migrations applied.
	Store *store.Store
	// Engine is the server's engine, built with the options given.
	Engine *engine.Engine
	// Logger writes to the Node's Logs.
	Logger *slog.Logger
	// CertFile and KeyFile are a self-signed certificate for 127.0.0.1
	// and its key, as PEM files, with the option TLS; empty without it.
	// The caller serves HTTPS with them on the listener it is given.
	CertFile, KeyFile string
}

// Node is a server started by Start, serving until the test ends or Stop.
type Node struct {
	// URL is the server's base URL, http://127.0.0.1:port (https with TLS).
	URL string
	// Addr is the listener's address, host:port; the option Addr starts
	// another server on it after Stop.
	Addr string
	// Store and Engine are the server's. Stop closes them.
	Store  *store.Store
	Engine *engine.Engine

	logs    *SyncBuffer
	client  *http.Client
	tls     *tls.Config // the client's, with TLS; nil without it
	srv     Server
	served  chan error // Serve's result; nil until it runs
	stopped bool
}

// Start opens the store and the engine, builds the server with build, and
// serves it on a new listener; the test fails if any of that fails. The
// server is stopped when the test ends, as Stop does. Cleanups that build
// registers run before that stop.
func Start(t testing.TB, build func(Env) (Server, error), opts ...Option) *Node {
	t.Helper()
	o := options{dbPath: filepath.Join(t.TempDir(), "sluice.db"), addr: "127.0.0.1:0"}
	for _, opt := range opts {
		opt(&o)
	}
	n := &Node{logs: &SyncBuffer{}}
	logger := slog.New(slog.DiscardHandler)
	if !o.discardLogs {
		logger = slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	env := Env{Logger: logger}
	if o.tls {
		env.CertFile, env.KeyFile, n.tls = selfSigned(t)
	}

	st, err := store.Open(t.Context(), database(t, o.dbPath), logger)
	if err != nil {
		t.Fatalf("servertest: store.Open: %v", err)
	}
	n.Store, env.Store = st, st
	n.Engine = engine.New(o.engine)
	env.Engine = n.Engine
	// Registered before build runs, so that the store and the engine are
	// closed however Start ends.
	t.Cleanup(func() { n.Stop(t) })

	srv, err := build(env)
	if err != nil {
		t.Fatalf("servertest: building the server: %v", err)
	}
	n.srv = srv
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	n.Addr = ln.Addr().String()
	n.URL = "http://" + n.Addr
	n.client = &http.Client{Timeout: 10 * time.Second}
	if n.tls != nil {
		n.URL = "https://" + n.Addr
		n.client.Transport = &http.Transport{TLSClientConfig: n.tls}
	}
	n.served = make(chan error, 1)
	go func() { n.served <- srv.Serve(ln) }()
	return n
}

// Stop shuts the server down gracefully and closes its store and engine.
// It fails the test if Shutdown fails, or if Serve returns an error; after
// the first call it does nothing.
func (n *Node) Stop(t testing.TB) {
	t.Helper()
	var shutdown func(context.Context) error // none: build failed
	if n.srv != nil {
		shutdown = n.srv.Shutdown
	}
	n.StopWith(t, shutdown)
}

// StopWith is Stop with shutdown in place of the server's Shutdown: a test
// stops it the way a crash would, without the last flush. shutdown must
// make Serve return.
func (n *Node) StopWith(t testing.TB, shutdown func(context.Context) error) {
	t.Helper()
	if n.stopped {
		return
	}
	n.stopped = true
	defer n.Engine.Close()
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	var errs []error
	if shutdown != nil {
		if err := shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		}
	}
	if n.served != nil {
		if err := <-n.served; err != nil {
			errs = append(errs, fmt.Errorf("the server's Serve returned %w after the shutdown, want nil", err))
		}
	}
	if err := n.Store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing the store: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		t.Errorf("servertest: %v", err)
	}
}

// Logs is what the server has logged so far, at debug level and above.
func (n *Node) Logs() string { return n.logs.String() }
