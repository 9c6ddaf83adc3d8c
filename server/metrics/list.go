package metrics

import (
	"cmp"
	"context"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/store"
)

// The resource list is the store's catalogue (every resource with stored
// traffic or named by a rule), plus the resources collected since the last
// flush that the catalogue does not hold yet, a set as small as what one
// flush interval brings. A page is read from the catalogue's name index
// with one LIMIT/OFFSET query, widened by the size of that set, and merged
// with it in memory; the total is the catalogue's count plus that set. So a
// page costs what it holds, not what the list holds (the offset is walked
// in the index; q, a substring, scans the names).
//
// The live sorts put first the resources with that live rate, which only
// the engine and the reporting instances know: they are ranked in memory
// over the engine's tracked resources, bounded by --max-resources, and
// those the instances report. Every other resource follows by
// name, paged as above with the ranked ones skipped. The blocked-share
// order ranks likewise the resources with calls in the backlog's last
// RecentSeconds.

// Order is an order of the resource list.
type Order string

// Orders of the resource list.
const (
	// ByName orders by name, byte-wise.
	ByName Order = "name"
	// ByBlockQps and ByPassQps put first the resources with that live
	// rate, highest first, ties by name, then every other by name.
	ByBlockQps Order = "-blockQps"
	ByPassQps  Order = "-passQps"
	// ByBlockedShare puts first the resources with calls in the last
	// RecentSeconds, by the share of them blocked, highest first, ties by
	// blocked calls, then by name; then every other by name. A resource
	// that blocks all its calls never ranks below one that blocks some.
	ByBlockedShare Order = "-blockedShare"
)

// ResourceView is a resource of the list: its rules, when it was seen, its
// traffic now and in the last finished minute.
type ResourceView struct {
	Name string
	// Rules counts the rules that name the resource, disabled ones too.
	Rules int
	// FirstSeen and LastSeen bound the resource's traffic; nil while
	// it had none.
	FirstSeen, LastSeen *time.Time
	Live                engine.LiveStats
	LastMinute          engine.Counts
	// LastMinuteBlocks splits LastMinute's Block by rule and reason.
	LastMinuteBlocks []engine.RuleBlocks
	// Recent is its calls over the last RecentSeconds.
	Recent Recent
}

// liveResource is a resource the engine counts traffic for now.
type liveResource struct {
	name string
	live engine.LiveStats
}

// liveRate is the figure a live sort ranks by.
func liveRate(order Order, l engine.LiveStats) float64 {
	if order == ByBlockQps {
		return l.BlockQps
	}
	return l.PassQps
}

// ranked returns the tracked resources whose name contains q and whose
// live rate of order is above zero, highest first, ties by name; none for
// the name order.
func (p *Pipeline) ranked(q string, order Order) []liveResource {
	if order == ByName {
		return nil
	}
	if order == ByBlockedShare {
		return p.rankedByShare(q)
	}
	var out []liveResource
	p.eachLive(func(name string, l engine.LiveStats) {
		if liveRate(order, l) > 0 && store.NameContains(name, q) {
			out = append(out, liveResource{name: name, live: l})
		}
	})
	slices.SortFunc(out, func(a, b liveResource) int {
		return cmp.Or(cmp.Compare(liveRate(order, b.live), liveRate(order, a.live)), cmp.Compare(a.name, b.name))
	})
	return out
}

// rankedByShare returns the resources whose name contains q and that had
// calls in the last RecentSeconds, by blocked share, then blocked calls,
// highest first, then by name. Their live figures are left to describe.
func (p *Pipeline) rankedByShare(q string) []liveResource {
	recent := p.backlog.Recent(nil)
	out := make([]liveResource, 0, len(recent))
	for name := range recent {
		if store.NameContains(name, q) {
			out = append(out, liveResource{name: name})
		}
	}
	slices.SortFunc(out, func(a, b liveResource) int {
		ra, rb := recent[a.name], recent[b.name]
		return cmp.Or(cmp.Compare(rb.BlockedShare(), ra.BlockedShare()), cmp.Compare(rb.Block, ra.Block), cmp.Compare(a.name, b.name))
	})
	return out
}

// ownRoute matches the resources of Sluice's own API routes, which the
// server's guard names "METHOD /api/v1/…".
var ownRoute = regexp.MustCompile(`^[A-Z]+ /api/v1(/|$)`)

// RecentTotals sums the calls of the last RecentSeconds over every
// resource but Sluice's own API routes: the console's own requests would
// otherwise dilute the blocked share an operator reads first.
func (p *Pipeline) RecentTotals() Recent {
	var sum Recent
	for name, r := range p.backlog.Recent(nil) {
		if !ownRoute.MatchString(name) {
			sum.Pass += r.Pass
			sum.Block += r.Block
			sum.ShadowBlock += r.ShadowBlock
		}
	}
	return sum
}

// Resources returns one page of the resource list, the resources whose name
// contains q (store.NameContains) in order, and how many resources the
// list holds.
func (p *Pipeline) Resources(ctx context.Context, q string, order Order, page store.Page) ([]ResourceView, int64, error) {
	// Ranked before the collection below: whatever has traffic now was
	// recorded in its minute, so the collection gives it a tally.
	ranked := p.ranked(q, order)
	var items []ResourceView
	var total int64
	err := p.readStore(func() error {
		fresh, err := p.fresh(ctx, q)
		if err != nil {
			return err
		}
		count, err := p.store.CountCatalogue(ctx, q)
		if err != nil {
			return err
		}
		total = count + int64(len(fresh))

		offset := (page.Number - 1) * page.Size
		var names []string
		live := map[string]engine.LiveStats{}
		for _, r := range ranked[min(offset, len(ranked)):min(offset+page.Size, len(ranked))] {
			names = append(names, r.name)
			if order != ByBlockedShare {
				live[r.name] = r.live
			}
		}
		if rest := page.Size - len(names); rest > 0 {
			skip, extra := splitRanked(ranked, fresh)
			more, err := p.mergedNames(ctx, q, skip, extra, max(0, offset-len(ranked)), rest)
			if err != nil {
				return err
			}
			names = append(names, more...)
		}
		items, err = p.describe(ctx, names, live)
		return err
	})
	return items, total, err
}

// fresh returns, sorted, the names containing q that were collected since
// the last flush and that the catalogue does not hold yet. Those it holds
// already (seen before a restart) are looked up once: the pipeline forgets
// them.
func (p *Pipeline) fresh(ctx context.Context, q string) ([]string, error) {
	var names []string
	for _, name := range p.unstoredNames() {
		if store.NameContains(name, q) {
			names = append(names, name)
		}
	}
	stored, err := p.store.CatalogueEntries(ctx, names)
	if err != nil {
		return nil, err
	}
	p.catalogued(slices.Collect(maps.Keys(stored)))
	names = slices.DeleteFunc(names, func(name string) bool { _, ok := stored[name]; return ok })
	slices.Sort(names)
	return names, nil
}

// splitRanked sorts the ranked resources out of the name order: skip, the
// ranked ones the catalogue holds, and extra, the fresh ones not ranked;
// both sorted by name.
func splitRanked(ranked []liveResource, fresh []string) (skip, extra []string) {
	isRanked := make(map[string]bool, len(ranked))
	for _, r := range ranked {
		isRanked[r.name] = true
		if _, found := slices.BinarySearch(fresh, r.name); !found {
			skip = append(skip, r.name)
		}
	}
	slices.Sort(skip)
	for _, name := range fresh {
		if !isRanked[name] {
			extra = append(extra, name)
		}
	}
	return skip, extra
}

// mergedNames returns the names [offset, offset+limit) of the list that
// holds, in name order, the catalogue's names containing q except those of
// skip, and the names of extra, which the catalogue does not hold; skip
// and extra are sorted. One query reads the catalogue from where the page
// may start, widened by len(skip) and len(extra), the most the two can move
// it by.
func (p *Pipeline) mergedNames(ctx context.Context, q string, skip, extra []string, offset, limit int) ([]string, error) {
	from := max(0, offset-len(extra))
	want := limit + len(extra) + len(skip)
	window, err := p.store.CatalogueNames(ctx, q, from, want)
	if err != nil {
		return nil, err
	}
	if len(window) == 0 && from > 0 {
		return nil, nil // past the end
	}
	// base is the list position of the first name merged below.
	base, firstExtra, lastExtra := 0, 0, len(extra)
	if from > 0 {
		firstExtra = below(extra, window[0])
		base = from - below(skip, window[0]) + firstExtra
	}
	if len(window) == want {
		lastExtra = below(extra, window[len(window)-1])
	}
	merged := make([]string, 0, len(window)+lastExtra-firstExtra)
	rest := extra[firstExtra:lastExtra]
	for _, name := range window {
		if _, found := slices.BinarySearch(skip, name); found {
			continue
		}
		for len(rest) > 0 && rest[0] < name {
			merged, rest = append(merged, rest[0]), rest[1:]
		}
		merged = append(merged, name)
	}
	merged = append(merged, rest...)
	start := offset - base
	if start >= len(merged) {
		return nil, nil
	}
	return merged[start:min(start+limit, len(merged))], nil
}

// below counts the names of sorted that sort before name.
func below(sorted []string, name string) int {
	i, _ := slices.BinarySearch(sorted, name)
	return i
}

// describe builds the items of names: their catalogue entry, their tally
// since the last flushes, their live figures (live's, else the engine's)
// and their last finished minute.
func (p *Pipeline) describe(ctx context.Context, names []string, live map[string]engine.LiveStats) ([]ResourceView, error) {
	items := make([]ResourceView, len(names))
	if len(names) == 0 {
		return items, nil
	}
	entries, err := p.store.CatalogueEntries(ctx, names)
	if err != nil {
		return nil, err
	}
	tallies := p.seen(names)
	lastMinuteMs := floorMs(p.NowMs(), store.MinuteMs) - store.MinuteMs
	figures, err := p.minuteFigures(ctx, lastMinuteMs, names)
	if err != nil {
		return nil, err
	}
	blocks, err := p.minuteBlocks(ctx, lastMinuteMs, names)
	if err != nil {
		return nil, err
	}
	recent := p.backlog.Recent(names)
	for i, name := range names {
		it := ResourceView{Name: name}
		if e, ok := entries[name]; ok {
			it.Rules = e.RuleCount
			if e.FirstSeenMs != nil {
				seen(&it, *e.FirstSeenMs, *e.LastSeenMs)
			}
		}
		if t, ok := tallies[name]; ok {
			seen(&it, t.firstSeenMs, t.lastSeenMs)
		}
		l, ok := live[name]
		if !ok {
			l = p.liveOf(name)
		}
		it.Live = l
		it.LastMinute, it.LastMinuteBlocks = figures[name], blocks[name]
		it.Recent = recent[name]
		items[i] = it
	}
	return items, nil
}

// seen widens the view's first and last seen times to include
// [firstMs, lastMs].
func seen(it *ResourceView, firstMs, lastMs int64) {
	first, last := time.UnixMilli(firstMs).UTC(), time.UnixMilli(lastMs).UTC()
	if it.FirstSeen == nil || first.Before(*it.FirstSeen) {
		it.FirstSeen = &first
	}
	if it.LastSeen == nil || last.After(*it.LastSeen) {
		it.LastSeen = &last
	}
}
