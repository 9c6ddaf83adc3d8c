// Package window implements the LeapArray: a fixed ring of time buckets whose
// counters are read and written with atomics and reused as time moves on, the
// sliding-window statistic every flow decision in Sluice is made from.
//
// Every function takes the current time as a parameter, so callers decide
// which clock applies and tests stay deterministic.
package window
