package engine

import (
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"
)

// ReasonAuthority is an authority rule: the caller's origin is not
// allowed.
const ReasonAuthority BlockReason = "authority"

// AuthorityStrategy says what an authority rule does with the origins it
// lists.
type AuthorityStrategy string

// Authority strategies.
const (
	// AuthorityAllow lets only the listed origins call; a call without an
	// origin is blocked too (stricter than Sentinel, which lets it pass).
	AuthorityAllow AuthorityStrategy = "allow"
	// AuthorityDeny blocks the listed origins.
	AuthorityDeny AuthorityStrategy = "deny"
)

// Limits of authority rule fields.
const (
	MaxAuthorityOrigins = 1000
	MaxOriginLen        = 256
)

// AuthorityRule allows or denies calls by their origin (WithOrigin).
type AuthorityRule struct {
	// Name identifies the rule in block errors.
	Name     string
	Resource string
	Mode     Mode
	Strategy AuthorityStrategy
	Origins  []string
	// ExpiresAtMs, if not 0, is when the rule stops applying (see
	// FlowRule.ExpiresAtMs).
	ExpiresAtMs int64
}

// AuthorityKind is the kind of authority rules (AuthorityRule).
var AuthorityKind = kindOf(Kind{Name: KindAuthority, Label: "Authority", Title: "Authority rule",
	Help: "allow or deny callers by their origin", Fields: AuthorityRuleFields,
	Summary: "who may call: [strategy=deny:anyone but {origins}][strategy=allow:only {origins}]"},
	nil, checkAuthority, setOf[AuthorityRule]{list: "authority", book: authorityKind,
		rules:  func(set *ResourceRules) *[]AuthorityRule { return &set.Authority },
		staged: func(c *ruleChange, resource string) *[]AuthorityRule { return &c.resources[resource].authority }})

// WithDefaults returns the rule with its mode set if unset.
func (r AuthorityRule) WithDefaults() AuthorityRule {
	AuthorityKind.WithDefaults(&r)
	return r
}

// Validate checks the rule as WithDefaults would complete it and returns
// one FieldError for every bad field, named as in JSON.
func (r AuthorityRule) Validate() []FieldError { return AuthorityKind.validateOwn(&r) }

// checkAuthority checks the origins one by one.
func checkAuthority(r *AuthorityRule, errs *fieldErrors) {
	switch {
	case len(r.Origins) == 0:
		errs.add("origins", "is required: at least one origin")
	case len(r.Origins) > MaxAuthorityOrigins:
		errs.add("origins", fmt.Sprintf("must list at most %d origins", MaxAuthorityOrigins))
	}
	for i, origin := range r.Origins {
		errs.check(fmt.Sprintf("origins[%d]", i), validateOrigin(origin))
	}
}

// validateOrigin says why origin is not a valid origin name, or "".
func validateOrigin(origin string) string {
	if n := utf8.RuneCountInString(origin); n == 0 || n > MaxOriginLen {
		return fmt.Sprintf("must be 1-%d characters", MaxOriginLen)
	}
	return ""
}

// authorityChecker is a loaded authority rule; it has no state.
type authorityChecker struct {
	rule    AuthorityRule
	blocked *BlockError
	shadow  bool
	allow   bool
	origins map[string]struct{}
}

func newAuthorityChecker(rule AuthorityRule) *authorityChecker {
	c := &authorityChecker{rule: rule, blocked: newBlockError(ReasonAuthority, rule.Name),
		shadow: rule.Mode == ModeShadow, allow: rule.Strategy == AuthorityAllow,
		origins: make(map[string]struct{}, len(rule.Origins))}
	for _, o := range rule.Origins {
		c.origins[o] = struct{}{}
	}
	return c
}

// allows reports whether a call from origin may pass.
func (c *authorityChecker) allows(origin string) bool {
	_, listed := c.origins[origin]
	return listed == c.allow
}

// LoadAuthorityRules replaces every authority rule with rules, as
// LoadFlowRules does for flow rules.
func (e *Engine) LoadAuthorityRules(rules []AuthorityRule) error {
	loaded, err := validateSet(AuthorityKind, "rules", rules, nil)
	if err != nil {
		return err
	}
	c := newRuleChange(len(loaded))
	for _, rule := range loaded {
		rc := c.of(rule.Resource)
		rc.authority = append(rc.authority, rule)
	}
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.commitEvery(c, authorityKind)
	return nil
}

// ValidateAuthorityRules checks rules as LoadAuthorityRules would,
// without loading them.
func ValidateAuthorityRules(rules []AuthorityRule) error {
	_, err := validateSet(AuthorityKind, "rules", rules, nil)
	return err
}

// AuthorityRules returns the loaded authority rules, defaults filled in,
// grouped by resource as FlowRules does.
func (e *Engine) AuthorityRules() []AuthorityRule {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	var rules []AuthorityRule
	for _, set := range e.book.inOrder(maps.Keys(e.book.entries)) {
		for _, c := range set.authority() {
			rule := c.rule
			rule.Origins = slices.Clone(rule.Origins)
			rules = append(rules, rule)
		}
	}
	return rules
}
