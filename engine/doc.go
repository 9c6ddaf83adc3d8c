// Package engine is Sluice's flow-control core: sliding-window statistics
// per resource, and the rules that ask them for a decision on every
// Entry/Exit:
//
//   - flow rules (FlowRule): a threshold of passes per interval or of calls
//     in flight, rejected at once, throttled (evenly spaced) or warmed up,
//     on a resource's own traffic or an associated one's, per origin
//     (limitApp), counted by this engine or by every engine together
//     (scope cluster, with a ClusterCounter);
//   - circuit breakers (CircuitBreakerRule) on slow calls or errors;
//   - hotspot rules (HotspotRule): a threshold per value of a call's
//     parameter, with the hottest values sketched;
//   - authority rules (AuthorityRule): who may call, by origin;
//   - system rules (SystemRule): the process's load, CPU, response time,
//     calls in flight or inbound rate, for every inbound call.
//
// Every rule may run in shadow mode (counted, never blocking) and expire.
// Each kind is described once in the registry (Kinds, Kind): its field
// table, from which rules are defaulted and validated, the API's rule
// JSON is read and written (engine/wire), and the console's form and the
// rules reference are made.
//
// The engine also bounds what it tracks (Options.MaxResources, idle
// eviction), hands out its counts per minute for a metric pipeline, and
// reports breaker state changes. It imports the standard library only and
// keeps no global state: a program creates one *Engine with New, shares it,
// and closes it when done. Its subpackages: window (the sliding windows),
// wire (the JSON of rules), remote (an engine that takes its rules from a
// Sluice server and reports to it) and middleware (HTTP guards).
package engine
