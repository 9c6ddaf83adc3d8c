package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/engine/remote"
	"github.com/sluicehq/sluice/server/demo/shop"
)

// FleetApp is the app of the demo's instances.
const FleetApp = "shop"

// fleetRates are the calls a second each demo instance drives through its
// own routes: a fleet whose members differ, as real ones do.
var fleetRates = []float64{12, 20, 30}

// Fleet is the demo's instances: shop services (package shop) running
// in-process, each with its own engine/remote client, listener and
// traffic, reporting to the server as a fleet of processes would.
type Fleet struct {
	once    sync.Once
	err     error
	cancel  context.CancelFunc
	servers []*http.Server
	clients []*remote.Client
	wg      sync.WaitGroup
	logger  *slog.Logger
}

// StartFleet starts the demo's instances against the server at serverURL,
// with token, one of role instance; Close the answer to stop them.
func StartFleet(serverURL, token string, logger *slog.Logger) (*Fleet, error) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fleet{cancel: cancel, logger: logger}
	for i, rate := range fleetRates {
		if err := f.start(ctx, i, rate, serverURL, token); err != nil {
			return nil, errors.Join(err, f.Close())
		}
	}
	logger.Info("demo: instances of app shop report to the server", "instances", len(fleetRates))
	return f, nil
}

func (f *Fleet) start(ctx context.Context, i int, rate float64, serverURL, token string) error {
	client, err := remote.New(remote.Config{
		ServerURL: serverURL, Token: token, App: FleetApp, Version: "demo",
		InstanceID: fmt.Sprintf("demo-shop-%d", i+1), Logger: f.logger,
	})
	if err != nil {
		return err
	}
	f.clients = append(f.clients, client)
	if err := client.Start(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: shop.Handler(client), ReadHeaderTimeout: 5 * time.Second}
	f.servers = append(f.servers, srv)
	f.wg.Go(func() { _ = srv.Serve(ln) })
	f.wg.Go(func() { shop.Drive(ctx, "http://"+ln.Addr().String(), rate) })
	return nil
}

// Close stops the instances' traffic and servers, and closes their
// clients, which report the minute in progress. Safe on a nil Fleet and
// more than once.
func (f *Fleet) Close() error {
	if f == nil {
		return nil
	}
	f.once.Do(func() {
		f.cancel()
		var errs []error
		for _, srv := range f.servers {
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, srv.Shutdown(shutdown))
			cancel()
		}
		f.wg.Wait()
		for _, c := range f.clients {
			errs = append(errs, c.Close())
		}
		f.err = errors.Join(errs...)
	})
	return f.err
}
