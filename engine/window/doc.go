// Package window implements Sluice's sliding-window statistics with
// atomics: the Tally, a resource's running totals with marks of the last
// second and minutes, which a call counts into with one add per event; the
// LeapArray, a fixed ring of time buckets reused as time moves on, which a
// circuit breaker's window is; and the PassLog, the pass times a flow
// decision reads.
//
// Every function takes the current time as a parameter, so callers decide
// which clock applies and tests stay deterministic.
package window
