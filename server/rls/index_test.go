package rls

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/descriptor"
)

// changingRules is a rule source whose writes the test makes: a write
// closes the watch, and reads fail while failing is set.
type changingRules struct {
	all     []wire.Rule
	failing error
	watch   chan struct{}
	reads   int
}

func (c *changingRules) Watch(context.Context) (int64, <-chan struct{}, error) {
	return 0, c.watch, nil
}

func (c *changingRules) All(context.Context) ([]wire.Rule, error) {
	c.reads++
	return c.all, c.failing
}

func (c *changingRules) write(all []wire.Rule) {
	c.all = all
	close(c.watch)
	c.watch = make(chan struct{})
}

func TestIndexKeepsTheLastRulesWhileTheStoreFails(t *testing.T) {
	flow := func(name, resource string) wire.Rule {
		return wire.Rule{Name: name, Kind: engine.KindFlow, Resource: resource, Enabled: true, Spec: engine.FlowRule{}}
	}
	src := &changingRules{all: []wire.Rule{flow("a", "d:k=a")}, watch: make(chan struct{})}
	ix, err := newIndex(t.Context(), src, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_000_000, 0)
	ix.now = func() time.Time { return now }
	has := func(value string) bool {
		_, ok := ix.get(t.Context()).resolve("d", []descriptor.Entry{{Key: "k", Value: value}})
		return ok
	}
	src.failing = errors.New("the store is down")
	src.write([]wire.Rule{flow("b", "d:k=b")})
	if !has("a") || src.reads != 2 {
		t.Fatalf("after a failed read: a matched %v, %d reads; want the last index, 2 reads", has("a"), src.reads)
	}
	has("a")
	if src.reads != 2 {
		t.Fatalf("%d reads within a second of a failure, want none more", src.reads)
	}
	now = now.Add(retryAfterFailure)
	src.failing = nil
	if !has("b") || has("a") || src.reads != 3 {
		t.Fatalf("a second later: b matched %v, %d reads; want the new index", has("b"), src.reads)
	}
}
