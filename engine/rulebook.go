package engine

import (
	"cmp"
	"iter"
	"slices"
)

// ruleBook is the loaded rules by resource, so that a load rebuilds and
// republishes only the resources it touches: loading the rules of a few
// resources costs the same whether the engine holds ten rules or a million.
// Engine.loadMu guards it.
type ruleBook struct {
	// entries holds every resource with rules of its own or measured by an
	// associated flow rule of another resource, and no other.
	entries map[*Resource]bookEntry
	// withBreakers holds the resources of entries that have circuit
	// breakers, so that listing the breakers costs what they cost.
	withBreakers map[*Resource]struct{}
	// measuredBy lists the associated flow rules that measure a resource
	// other than their own, by the resource they measure.
	measuredBy map[*Resource][]*flowChecker
	// names gives, by kind, the resource of each named rule.
	names   [kinds]map[string]*Resource
	nextSeq int64
}

type bookEntry struct {
	seq   int64    // when the resource entered the book; listings follow it
	rules *ruleSet // as published
}

// ruleChange is a load: the new rules of each resource it replaces.
type ruleChange struct {
	order     []string // the resources, in the order they came
	resources map[string]*resourceChange
	// system is the new system rules, which are on no resource, when the
	// load replaces them.
	system []SystemRule
}

// resourceChange is the new rules of one resource, of the kinds replaced.
type resourceChange struct {
	flow      []FlowRule
	breakers  []CircuitBreakerRule
	hotspot   []HotspotRule
	authority []AuthorityRule
	adaptive  []AdaptiveConcurrencyRule
	replaced  [kinds]bool
}

// rules reports whether the change gives its resource any rule.
func (rc *resourceChange) rules() bool {
	return len(rc.flow) > 0 || len(rc.breakers) > 0 || len(rc.hotspot) > 0 || len(rc.authority) > 0 || len(rc.adaptive) > 0
}

// ruleKind is a kind of rule, an index of the arrays kept by kind.
type ruleKind int

const (
	flowKind ruleKind = iota
	breakerKind
	hotspotKind
	authorityKind
	adaptiveKind
	kinds
)

// newRuleChange returns an empty change, room made for about resources
// resources.
func newRuleChange(resources int) *ruleChange {
	return &ruleChange{resources: make(map[string]*resourceChange, resources)}
}

// of returns the change of the named resource, adding it if need be.
func (c *ruleChange) of(name string) *resourceChange {
	rc := c.resources[name]
	if rc == nil {
		rc = &resourceChange{}
		c.resources[name] = rc
		c.order = append(c.order, name)
	}
	return rc
}

// commit loads c, which is valid. Each resource it replaces gets its new
// rules, keeping the checker or breaker (and so the state) of every rule it
// loads again unchanged; then each resource whose rules, or whose measuring
// by other resources' rules, changed switches to its new rule set with one
// atomic store. The caller holds loadMu.
func (e *Engine) commit(c *ruleChange) {
	b := &e.book
	if b.entries == nil {
		b.entries = map[*Resource]bookEntry{}
		b.withBreakers = map[*Resource]struct{}{}
		b.measuredBy = map[*Resource][]*flowChecker{}
		for kind := range b.names {
			b.names[kind] = map[string]*Resource{}
		}
	}
	st := &staging{e: e, now: e.clock.NowMs(), sets: make(map[*Resource]*ruleSet, len(c.order)),
		unlinked: map[*flowChecker]bool{}, linked: map[*Resource][]*flowChecker{}}
	for _, name := range c.order {
		rc := c.resources[name]
		var r *Resource
		if rc.rules() {
			r = e.resourceFor(name)
		} else if r = e.Lookup(name); r == nil || !b.has(r) {
			continue // it had no rules and gets none
		}
		if rc.replaced[flowKind] {
			st.replaceFlow(r, rc.flow)
		}
		if rc.replaced[breakerKind] {
			st.replaceBreakers(r, rc.breakers)
		}
		if rc.replaced[hotspotKind] {
			st.replaceHotspot(r, rc.hotspot)
		}
		if rc.replaced[authorityKind] {
			st.replaceAuthority(r, rc.authority)
		}
		if rc.replaced[adaptiveKind] {
			st.replaceAdaptive(r, rc.adaptive)
		}
	}
	st.publish()
	e.pruneRestored(st.now)
}

// staging is a commit in progress: the resources to publish, with their own
// rules as they will be, and the associated rules that stop or start
// measuring other resources.
type staging struct {
	e        *Engine
	now      int64
	sets     map[*Resource]*ruleSet
	order    []*Resource // the keys of sets, in the order they came
	unlinked map[*flowChecker]bool
	linked   map[*Resource][]*flowChecker
}

// stage returns r's rule set to publish, its own rules as loaded so far.
func (st *staging) stage(r *Resource) *ruleSet {
	s := st.sets[r]
	if s == nil {
		s = &ruleSet{}
		if entry, ok := st.e.book.entries[r]; ok {
			s.flow, s.breakers = entry.rules.flow, entry.rules.breakers
			if more := entry.rules.more; more != nil {
				s.more = &moreRules{hotspot: more.hotspot, authority: more.authority, adaptive: more.adaptive}
			}
		}
		st.sets[r] = s
		st.order = append(st.order, r)
	}
	return s
}

// replaceFlow gives r the flow rules rules.
func (st *staging) replaceFlow(r *Resource, rules []FlowRule) {
	names := st.e.book.names[flowKind]
	s := st.stage(r)
	for _, old := range s.flow {
		if old.stat != r {
			st.unlinked[old] = true
			st.stage(old.stat)
		}
		if names[old.ruleName()] == r {
			delete(names, old.ruleName())
		}
	}
	loaded := s.flow
	s.flow = st.e.flowCheckersOf(r, s.flow, rules, st.now)
	if st.e.cluster != nil {
		st.e.cluster.replace(clusterShares(loaded), clusterShares(s.flow))
	}
	for _, added := range s.flow {
		if added.stat != r {
			st.linked[added.stat] = append(st.linked[added.stat], added)
			st.stage(added.stat)
		}
		if added.ruleName() != "" {
			names[added.ruleName()] = r
		}
	}
}

// replaceBreakers gives r the circuit breaker rules rules.
func (st *staging) replaceBreakers(r *Resource, rules []CircuitBreakerRule) {
	names := st.e.book.names[breakerKind]
	s := st.stage(r)
	for _, old := range s.breakers {
		if names[old.rule.Name] == r {
			delete(names, old.rule.Name)
		}
	}
	s.breakers = st.e.breakersOf(r, s.breakers, rules, st.now)
	for _, added := range s.breakers {
		if added.rule.Name != "" {
			names[added.rule.Name] = r
		}
	}
}

// replaceHotspot gives r the hotspot rules rules.
func (st *staging) replaceHotspot(r *Resource, rules []HotspotRule) {
	names := st.e.book.names[hotspotKind]
	s := st.stage(r)
	loaded := s.hotspot()
	for _, old := range loaded {
		if names[old.rule.Name] == r {
			delete(names, old.rule.Name)
		}
	}
	hotspot := make([]*keyedChecker, len(rules))
	s.edit().hotspot = hotspot
	taken := make([]bool, len(loaded))
	for i, rule := range rules {
		// Rules with specificItems are not comparable, so reuse cannot
		// index them; a resource has at most maxHotspotPerResource.
		j := -1
		for k, c := range loaded {
			if !taken[k] && c.rule.equal(rule) {
				j = k
				break
			}
		}
		if j >= 0 {
			hotspot[i], taken[j] = loaded[j], true
		} else {
			hotspot[i] = newHotspotChecker(rule)
			if c := hotspot[i]; c.quota() {
				c.seed(st.e.takeRestored(r.name, rule.Name), priorOf(loaded, rule.Name), st.now)
			}
		}
		if rule.Name != "" {
			names[rule.Name] = r
		}
	}
}

// replaceAuthority gives r the authority rules rules, which keep no state
// to reuse.
func (st *staging) replaceAuthority(r *Resource, rules []AuthorityRule) {
	names := st.e.book.names[authorityKind]
	s := st.stage(r)
	for _, old := range s.authority() {
		if names[old.rule.Name] == r {
			delete(names, old.rule.Name)
		}
	}
	authority := make([]*authorityChecker, len(rules))
	s.edit().authority = authority
	for i, rule := range rules {
		authority[i] = newAuthorityChecker(rule)
		if rule.Name != "" {
			names[rule.Name] = r
		}
	}
}

// replaceAdaptive gives r the adaptive concurrency rule of rules, at most
// one: the limiter of an equal rule is kept, and a changed rule's
// follows the limit its prior learned.
func (st *staging) replaceAdaptive(r *Resource, rules []AdaptiveConcurrencyRule) {
	names := st.e.book.names[adaptiveKind]
	s := st.stage(r)
	prior := s.adaptive()
	if prior != nil && names[prior.rule.Name] == r {
		delete(names, prior.rule.Name)
	}
	if s.more != nil {
		s.more.adaptive = nil
	}
	if len(rules) == 0 {
		return
	}
	rule := rules[0]
	if prior != nil && prior.rule == rule {
		s.edit().adaptive = prior
	} else {
		s.edit().adaptive = newAdaptiveLimiter(rule, r, prior, st.now)
	}
	if rule.Name != "" {
		names[rule.Name] = r
	}
}

// publish books and stores the rule set of every staged resource.
func (st *staging) publish() {
	b := &st.e.book
	for _, r := range st.order {
		measuredBy := b.measuredBy[r]
		if len(st.unlinked) > 0 {
			measuredBy = slices.DeleteFunc(measuredBy, func(c *flowChecker) bool { return st.unlinked[c] })
		}
		measuredBy = append(measuredBy, st.linked[r]...)
		if len(measuredBy) == 0 {
			delete(b.measuredBy, r)
		} else {
			b.measuredBy[r] = measuredBy
		}
		b.publish(r, st.sets[r], measuredBy, st.now)
	}
}

// has reports whether r is in the book.
func (b *ruleBook) has(r *Resource) bool {
	_, ok := b.entries[r]
	return ok
}

// publish completes s, r's own rules, with what the rules of r and of
// measuredBy need of r's calls, books it and stores in r its rules that
// have not expired by nowMs.
func (b *ruleBook) publish(r *Resource, s *ruleSet, measuredBy []*flowChecker, nowMs int64) {
	for _, c := range s.flow {
		if c.stat == r {
			s.measure(c, true)
		}
	}
	for _, c := range measuredBy {
		s.measure(c, false)
	}
	if s.adaptive() != nil {
		s.inFlightMatters = true
	}
	s.derive()
	if !s.own() && len(s.feeds) == 0 && !s.inFlightMatters {
		s = noRules
	}
	if !s.own() && len(measuredBy) == 0 {
		delete(b.entries, r)
	} else {
		entry, ok := b.entries[r]
		if !ok {
			entry.seq = b.nextSeq
			b.nextSeq++
		}
		entry.rules = s
		b.entries[r] = entry
	}
	if len(s.breakers) > 0 {
		b.withBreakers[r] = struct{}{}
	} else {
		delete(b.withBreakers, r)
	}
	r.storeRules(s.activeAt(nowMs))
}

// own reports whether s has rules of its resource's own.
func (s *ruleSet) own() bool {
	return len(s.flow) > 0 || len(s.breakers) > 0 || len(s.hotspot()) > 0 || len(s.authority()) > 0 || s.adaptive() != nil
}

// derive sets what Entry reads of s's rules: the flow rules that count
// every caller together, the rules that count per key (hotspot rules, and
// flow rules with a limitApp), the origins flow rules name, and the first
// expiry.
func (s *ruleSet) derive() {
	s.expiresAtMs = s.firstExpiry()
	byOrigin := slices.ContainsFunc(s.flow, func(c *flowChecker) bool { return c.perOrigin() != nil })
	if !byOrigin && len(s.hotspot()) == 0 && len(s.authority()) == 0 && s.adaptive() == nil {
		s.more = nil
		return
	}
	m := s.edit()
	// Without a limitApp, the slices are shared.
	m.flowAll, m.keyed, m.namedOrigins = s.flow, m.hotspot, nil
	if !byOrigin {
		return
	}
	m.flowAll, m.keyed = nil, nil
	for _, c := range s.flow {
		if c.perOrigin() == nil {
			m.flowAll = append(m.flowAll, c)
			continue
		}
		m.keyed = append(m.keyed, c.perOrigin())
		if origin := c.limitApp(); origin != LimitAppOther {
			if m.namedOrigins == nil {
				m.namedOrigins = map[string]struct{}{}
			}
			m.namedOrigins[origin] = struct{}{}
		}
	}
	m.keyed = append(m.keyed, m.hotspot...)
}

// firstExpiry returns when the first of s's rules expires, noExpiry if
// none does.
func (s *ruleSet) firstExpiry() int64 {
	first := int64(noExpiry)
	for _, c := range s.flow {
		first = min(first, expiry(c.expiresAtMs()))
	}
	for _, b := range s.breakers {
		first = min(first, expiry(b.rule.ExpiresAtMs))
	}
	for _, c := range s.hotspot() {
		first = min(first, expiry(c.rule.ExpiresAtMs))
	}
	for _, c := range s.authority() {
		first = min(first, expiry(c.rule.ExpiresAtMs))
	}
	if a := s.adaptive(); a != nil {
		first = min(first, expiry(a.rule.ExpiresAtMs))
	}
	return first
}

// expiry is when a rule with expiresAtMs stops applying: 0 is never.
func expiry(expiresAtMs int64) int64 {
	if expiresAtMs == 0 {
		return noExpiry
	}
	return expiresAtMs
}

// activeAt returns s without the rules expired by nowMs: s itself while
// none has. The book keeps s whole, so that listings show expired rules
// and a load compares against them; the feeds stay, as the passes they
// count cost nothing to decisions.
func (s *ruleSet) activeAt(nowMs int64) *ruleSet {
	if nowMs < s.expiresAtMs {
		return s
	}
	live := func(expiresAtMs int64) bool { return nowMs < expiry(expiresAtMs) }
	active := *s
	active.flow = nil
	for _, c := range s.flow {
		if live(c.expiresAtMs()) {
			active.flow = append(active.flow, c)
		}
	}
	active.breakers = nil
	for _, b := range s.breakers {
		if live(b.rule.ExpiresAtMs) {
			active.breakers = append(active.breakers, b)
		}
	}
	active.more = nil
	if s.more != nil {
		more := &moreRules{}
		for _, c := range s.more.hotspot {
			if live(c.rule.ExpiresAtMs) {
				more.hotspot = append(more.hotspot, c)
			}
		}
		for _, c := range s.more.authority {
			if live(c.rule.ExpiresAtMs) {
				more.authority = append(more.authority, c)
			}
		}
		if a := s.more.adaptive; a != nil && live(a.rule.ExpiresAtMs) {
			more.adaptive = a
		}
		active.more = more
	}
	active.derive()
	return &active
}

// expireRules publishes r's rules without those expired by nowMs, once
// for all callers, and returns them.
func (r *Resource) expireRules(nowMs int64) *ruleSet {
	e := r.eng
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	rs := r.rules.Load()
	if nowMs < rs.expiresAtMs || rs == evictedRules {
		return rs
	}
	if entry, ok := e.book.entries[r]; ok {
		rs = entry.rules.activeAt(nowMs)
	} else {
		rs = rs.activeAt(nowMs)
	}
	r.storeRules(rs)
	return rs
}

// measure adds to s what flow rule c needs of the calls of the resource it
// measures: their count in flight (a concurrency rule; the caller itself
// counted first when it is a rule of the same resource, own) or their
// passes fed to the rule's log.
func (s *ruleSet) measure(c *flowChecker, own bool) {
	if c.inFlight {
		s.inFlightMatters = true
		s.reserveConcurrency = s.reserveConcurrency || own
	}
	if c.passes != nil {
		s.feeds = append(s.feeds, c.passes)
	}
}

// clusterShares returns the shares of the cluster rules among flow.
func clusterShares(flow []*flowChecker) []*clusterShare {
	var shares []*clusterShare
	for _, c := range flow {
		if c.cluster() != nil {
			shares = append(shares, c.cluster())
		}
	}
	return shares
}

// flowCheckersOf returns the checkers of r's new flow rules, reusing those
// of loaded that check an equal rule.
func (e *Engine) flowCheckersOf(r *Resource, loaded []*flowChecker, rules []FlowRule, now int64) []*flowChecker {
	return reuse(loaded, (*flowChecker).rule, rules, func(rule FlowRule) *flowChecker {
		stat := r
		if rule.RelationStrategy == RelationAssociated {
			stat = e.resourceFor(rule.RefResource)
		}
		c := newFlowChecker(rule, stat, now)
		if c.quota() {
			c.passes = quotaPassLog(c, priorOf(loaded, rule.Name), e.takeRestored(r.name, rule.Name), now)
		}
		return c
	})
}

// priorOf returns the checker of loaded named name, which a rule of that
// name loaded in its place follows; nil for a rule without a name.
func priorOf[C interface{ ruleName() string }](loaded []C, name string) C {
	var none C
	if name == "" {
		return none
	}
	for _, c := range loaded {
		if c.ruleName() == name {
			return c
		}
	}
	return none
}

// breakersOf returns the breakers of r's new circuit breaker rules, reusing
// those of loaded with an equal rule.
func (e *Engine) breakersOf(r *Resource, loaded []*breaker, rules []CircuitBreakerRule, now int64) []*breaker {
	return reuse(loaded, func(b *breaker) CircuitBreakerRule { return b.rule }, rules, func(rule CircuitBreakerRule) *breaker {
		return newBreaker(rule, r, now, e.onBreakerChange)
	})
}

// reuseScanMax is the most loaded rules reuse looks through one by one;
// past it, it indexes them first.
const reuseScanMax = 8

// reuse returns what serves each of rules: a C of loaded whose rule is
// equal, each taken at most once, so that a load keeps the state of every
// rule it loads again unchanged; build makes the others.
func reuse[R comparable, C any](loaded []C, ruleOf func(C) R, rules []R, build func(R) C) []C {
	out := make([]C, len(rules))
	if len(loaded) > reuseScanMax {
		pool := make(map[R][]C, len(loaded))
		for _, c := range loaded {
			pool[ruleOf(c)] = append(pool[ruleOf(c)], c)
		}
		for i, rule := range rules {
			if list := pool[rule]; len(list) > 0 {
				out[i], pool[rule] = list[0], list[1:]
			} else {
				out[i] = build(rule)
			}
		}
		return out
	}
	var taken [reuseScanMax]bool
	for i, rule := range rules {
		j := 0
		for j < len(loaded) && (taken[j] || ruleOf(loaded[j]) != rule) {
			j++
		}
		if j < len(loaded) {
			out[i], taken[j] = loaded[j], true
		} else {
			out[i] = build(rule)
		}
	}
	return out
}

// inOrder returns the rule sets of resources, which are in the book, in
// the order the resources entered it.
func (b *ruleBook) inOrder(resources iter.Seq[*Resource]) []*ruleSet {
	var entries []bookEntry
	for r := range resources {
		entries = append(entries, b.entries[r])
	}
	slices.SortFunc(entries, func(x, y bookEntry) int { return cmp.Compare(x.seq, y.seq) })
	sets := make([]*ruleSet, len(entries))
	for i, entry := range entries {
		sets[i] = entry.rules
	}
	return sets
}

// ReadsCallAttributes reports whether a rule of r reads a call's origin or
// params (a hotspot or authority rule, or a flow rule with a limitApp), so
// that a caller whose origin and params cost work to compute (a request's
// client address as text, say) can leave them out when no rule would read
// them. A rule loaded between the report and the call misses that one
// call's attributes, as it misses the calls already in flight. True for a
// handle the engine forgot, whose calls look the resource up again.
func (r *Resource) ReadsCallAttributes() bool {
	rs := r.rules.Load()
	return rs.more != nil || rs == evictedRules
}
