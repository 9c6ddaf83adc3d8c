package rls

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/descriptor"
)

// Rules is where the index reads the stored rules: *rules.Service.
type Rules interface {
	// Watch returns a channel closed at the next rule write committed,
	// this replica's or (PostgreSQL) another's once followed.
	Watch(ctx context.Context) (int64, <-chan struct{}, error)
	// All returns every stored rule, enabled or not.
	All(ctx context.Context) ([]wire.Rule, error)
}

// retryAfterFailure spaces the index's reads of the rules while the store
// fails, so that calls do not each wait on a store that is down.
const retryAfterFailure = time.Second

// rebuildTimeout bounds a read of the rules on a call's path.
const rebuildTimeout = 5 * time.Second

// node is a configuration node of a domain: the descriptor path to it is
// the path of its resource.
type node struct {
	children map[descriptor.Entry]*node
	// resource names the node's rules; "" for a node that exists only as a
	// prefix of others.
	resource string
	path     []descriptor.Entry
	// names are its rules' names; replaces the names its enabled rules
	// replace.
	names    []string
	replaces []string
}

// child returns the node's child for e, made if missing.
func (n *node) child(e descriptor.Entry) *node {
	if n.children == nil {
		n.children = map[descriptor.Entry]*node{}
	}
	c := n.children[e]
	if c == nil {
		c = &node{}
		n.children[e] = c
	}
	return c
}

// domains is the index: each domain's root.
type domains map[string]*node

// buildIndex makes the index of every stored server-wide flow or hotspot
// rule, enabled or not, on a resource descriptor.Parse accepts.
func buildIndex(all []wire.Rule) domains {
	d := domains{}
	for i := range all {
		r := &all[i]
		if r.App != "" || (r.Kind != engine.KindFlow && r.Kind != engine.KindHotspot) {
			continue
		}
		domain, path, ok := descriptor.Parse(r.Resource)
		if !ok {
			continue
		}
		n := d[domain]
		if n == nil {
			n = &node{}
			d[domain] = n
		}
		for _, e := range path {
			n = n.child(e)
		}
		n.resource, n.path = r.Resource, path
		n.names = append(n.names, r.Name)
		// A shadow rule is still a limit that is evaluated, and replaces
		// as envoyproxy/ratelimit's shadow_mode limits do; a disabled one
		// is unlimited, which replaces nothing there either.
		if r.Enabled {
			n.replaces = append(n.replaces, replacesOf(r)...)
		}
	}
	return d
}

// replacesOf returns the names r's replaces field lists.
func replacesOf(r *wire.Rule) []string {
	var list string
	switch spec := r.Spec.(type) {
	case engine.FlowRule:
		list = spec.Replaces
	case engine.HotspotRule:
		list = spec.Replaces
	}
	if list == "" {
		return nil
	}
	return strings.Split(list, ",")
}

// match is what a descriptor resolved to: the node with rules it reached,
// and the request's values at the node's wildcard entries.
type match struct {
	node   *node
	values []string
}

// resolve walks the descriptor's entries from the domain's root: at each,
// the child key=value if there is one, else the wildcard child key, else
// no match. The node reached after the last entry matches if it has rules.
func (d domains) resolve(domain string, entries []descriptor.Entry) (match, bool) {
	n := d[domain]
	if n == nil {
		return match{}, false
	}
	var values []string
	for _, e := range entries {
		next := n.children[e]
		if next == nil || e.Value == "" {
			if next = n.children[descriptor.Entry{Key: e.Key}]; next == nil {
				return match{}, false
			}
			values = append(values, e.Value)
		}
		n = next
	}
	if n.resource == "" {
		return match{}, false
	}
	return match{node: n, values: values}, true
}

// index keeps the domains current: rebuilt, on the next call, after every
// rule write.
type index struct {
	rules  Rules
	logger *slog.Logger
	now    func() time.Time

	built atomic.Pointer[built]
	// mu serialises rebuilds.
	mu     sync.Mutex
	failed time.Time // the last failed rebuild; zero after a good one. Guarded by mu.
}

// built is an index of the rules and the watch taken before they were read.
type built struct {
	domains domains
	changed <-chan struct{}
}

// newIndex reads the rules once: the service starts with them.
func newIndex(ctx context.Context, rules Rules, logger *slog.Logger) (*index, error) {
	ix := &index{rules: rules, logger: logger, now: time.Now}
	if err := ix.rebuild(ctx); err != nil {
		return nil, err
	}
	return ix, nil
}

// rebuild reads the rules and makes the index of them. The watch is taken
// before the read, so a write that lands in between closes it and the
// next call reads again. The caller holds mu, or is newIndex.
func (ix *index) rebuild(ctx context.Context) error {
	_, changed, err := ix.rules.Watch(ctx)
	if err != nil {
		return err
	}
	all, err := ix.rules.All(ctx)
	if err != nil {
		return err
	}
	ix.built.Store(&built{domains: buildIndex(all), changed: changed})
	return nil
}

// get returns the index, rebuilt first if a rule was written since it was
// built: a call after a write, on this replica, sees it. While the store
// fails, the last index answers, and a rebuild is tried again at most every
// retryAfterFailure.
func (ix *index) get(ctx context.Context) domains {
	b := ix.built.Load()
	select {
	case <-b.changed:
	default:
		return b.domains
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if b = ix.built.Load(); !closed(b.changed) {
		return b.domains // another call rebuilt it
	}
	if now := ix.now(); now.Sub(ix.failed) >= retryAfterFailure {
		// The read serves every call waiting on it: the one call that
		// makes it must not end it by going away.
		readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rebuildTimeout)
		defer cancel()
		if err := ix.rebuild(readCtx); err != nil {
			ix.failed = now
			ix.logger.ErrorContext(ctx, "rls: reading the rules failed; answering with the last ones read", "error", err)
		} else {
			ix.failed = time.Time{}
		}
	}
	return ix.built.Load().domains
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
