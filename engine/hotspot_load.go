package engine

import (
	"fmt"
	"maps"
)

// LoadHotspotRules replaces every hotspot rule with rules, as
// LoadFlowRules does for flow rules: validated first (a *ValidationError
// names every bad field as "rules[i].field"), then switched to atomically
// per resource. A rule loaded again unchanged keeps its values'
// statistics.
func (e *Engine) LoadHotspotRules(rules []HotspotRule) error {
	loaded, err := validateHotspotRules("rules", rules)
	if err != nil {
		return err
	}
	c := newRuleChange(len(loaded))
	for _, rule := range loaded {
		rc := c.of(rule.Resource)
		rc.hotspot = append(rc.hotspot, rule)
	}
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.commitEvery(c, hotspotKind)
	return nil
}

// ValidateHotspotRules checks rules as LoadHotspotRules would, without
// loading them.
func ValidateHotspotRules(rules []HotspotRule) error {
	_, err := validateHotspotRules("rules", rules)
	return err
}

func validateHotspotRules(prefix string, rules []HotspotRule) ([]HotspotRule, error) {
	return validateSet(HotspotKind, prefix, rules, hotspotSetCheck(prefix, false))
}

// hotspotSetCheck is the check of a set of hotspot rules: at most
// maxHotspotPerResource per resource, one of them of metric concurrency.
func hotspotSetCheck(prefix string, _ bool) func(i int, rule HotspotRule, errs *fieldErrors) {
	perResource, held := map[string]int{}, map[string]int{}
	return func(i int, rule HotspotRule, errs *fieldErrors) {
		if perResource[rule.Resource]++; perResource[rule.Resource] == maxHotspotPerResource+1 {
			errs.add(fmt.Sprintf("%s[%d].resource", prefix, i), fmt.Sprintf("has more than %d hotspot rules", maxHotspotPerResource))
		}
		if rule.Metric != MetricConcurrency {
			return
		}
		if held[rule.Resource]++; held[rule.Resource] == 2 {
			errs.add(fmt.Sprintf("%s[%d].resource", prefix, i), "has more than one hotspot rule of metric concurrency: a call holds one value's count in flight per resource (sentinel-golang allows more); keep one, or make the others metric qps")
		}
	}
}

// HotspotRules returns the loaded hotspot rules, defaults filled in,
// grouped by resource as FlowRules does.
func (e *Engine) HotspotRules() []HotspotRule {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	var rules []HotspotRule
	for _, set := range e.book.inOrder(maps.Keys(e.book.entries)) {
		for _, c := range set.hotspot() {
			rules = append(rules, c.rule)
		}
	}
	return rules
}
