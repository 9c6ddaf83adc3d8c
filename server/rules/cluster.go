package rules

import "github.com/sluicehq/sluice/engine"

// ClusterRule returns the enabled, unexpired cluster flow rule called
// name, with its defaults, and the app it names, as of the last commit:
// the one whose shared count an engine leases from under that name.
func (s *Service) ClusterRule(name string) (engine.FlowRule, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.named[name]
	if !ok {
		return engine.FlowRule{}, "", false
	}
	r := s.rules[id]
	expiresAtMs := r.ExpiresAtMs()
	live := r.Enabled && (expiresAtMs == 0 || s.engine.Clock().NowMs() < expiresAtMs)
	if r.Kind != engine.KindFlow || !live {
		return engine.FlowRule{}, "", false
	}
	_, spec := r.EngineRule()
	f := spec.(*engine.FlowRule).WithDefaults()
	return f, r.App, f.Scope == engine.ScopeCluster
}
