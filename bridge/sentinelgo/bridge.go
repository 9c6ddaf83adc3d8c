package sentinelgo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/core/isolation"
	"github.com/alibaba/sentinel-golang/core/system"

	"github.com/sluicehq/sluice/engine/remote"
	"github.com/sluicehq/sluice/engine/wire"
)

// Bridge syncs a sentinel-golang service's rules from a Sluice server and
// reports its traffic there. Create one with New after sentinel-golang's
// api.Init*, Start it, and Close it when the service stops; the service's
// sentinel.Entry calls stay as they are.
type Bridge struct {
	client   *remote.Client
	recorder *recorder
	logger   *slog.Logger
	app      string

	mu          sync.Mutex // guards the fields below
	unsupported []Unsupported
	logged      map[Unsupported]bool
}

// State is what a Bridge knows: its sync and reports, and the rules of the
// set in force it did not load.
type State struct {
	remote.State
	// Unsupported lists the rules of the set in force that
	// sentinel-golang cannot express, by name, with the reason; they are
	// not loaded. Empty when every rule is.
	Unsupported []Unsupported
}

// New checks cfg as remote.New does and returns a Bridge, which loads no
// rule until Start. cfg.Engine is not used: the rules run in
// sentinel-golang.
func New(cfg remote.Config) (*Bridge, error) {
	b := &Bridge{recorder: newRecorder(), logger: cmp.Or(cfg.Logger, slog.Default()), app: cfg.App,
		logged: map[Unsupported]bool{}}
	client, err := remote.NewWith(cfg, remote.Hooks{Load: b.load, Stats: b.recorder})
	if err != nil {
		return nil, err
	}
	b.client = client
	return b, nil
}

// Start loads the cached rule set, if cfg.CacheDir holds one, starts
// counting sentinel-golang's entries, and syncs and reports in the
// background until ctx ends or Close. A process runs one Bridge at a time:
// sentinel-golang's rules and slot chain are the process's.
func (b *Bridge) Start(ctx context.Context) error {
	register()
	if !theSlot.active.CompareAndSwap(nil, b.recorder) {
		return errors.New("sentinelgo: another Bridge of this process is running")
	}
	if err := b.client.Start(ctx); err != nil {
		theSlot.active.CompareAndSwap(b.recorder, nil)
		return err
	}
	return nil
}

// Close stops the sync, reports what was counted since the last report
// (the current minute so far included) and stops counting. The rules stay
// loaded in sentinel-golang. Safe to call more than once.
func (b *Bridge) Close() error {
	err := b.client.Close()
	theSlot.active.CompareAndSwap(b.recorder, nil)
	return err
}

// Ready is closed once a rule set is in force, from the server or the
// cache.
func (b *Bridge) Ready() <-chan struct{} { return b.client.Ready() }

// State returns what the Bridge knows now.
func (b *Bridge) State() State {
	s := State{State: b.client.State()}
	b.mu.Lock()
	defer b.mu.Unlock()
	s.Unsupported = slices.Clone(b.unsupported)
	return s
}

// load puts a snapshot's rules in force in sentinel-golang, each kind's
// replacing that kind's rules. A set that does not decode is refused
// whole (the rules in force stay). The rules sentinel-golang cannot
// express are left out, listed in State and logged once each.
func (b *Bridge) load(snap wire.Snapshot) error {
	set, err := wire.DecodeRules(snap.Rules)
	if err != nil {
		return err
	}
	r := convert(set)
	// The refusals are told before the rules load, so that State never
	// shows a set in force without its refusals.
	b.refused(r.unsupported)
	var errs []error
	for kind, load := range map[string]func() (bool, error){
		"flow":           func() (bool, error) { return flow.LoadRules(r.flow) },
		"isolation":      func() (bool, error) { return isolation.LoadRules(r.isolation) },
		"circuitBreaker": func() (bool, error) { return circuitbreaker.LoadRules(r.breakers) },
		"hotspot":        func() (bool, error) { return hotspot.LoadRules(r.hotspot) },
		"system":         func() (bool, error) { return system.LoadRules(r.system) },
	} {
		if _, err := load(); err != nil {
			errs = append(errs, fmt.Errorf("sentinel-golang refused the %s rules: %w", kind, err))
		}
	}
	return errors.Join(errs...)
}

// refused records the rules of the set being loaded that are not, and
// logs those not logged before.
func (b *Bridge) refused(unsupported []Unsupported) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unsupported = unsupported
	for _, u := range unsupported {
		if !b.logged[u] {
			b.logged[u] = true
			b.logger.Warn("sluice sentinel bridge: rule not loaded", "app", b.app, "rule", u.Name, "kind", u.Kind,
				"reason", u.Reason)
		}
	}
}
