// Package engine is Sluice's flow-control core: sliding-window statistics per
// resource, flow rules (reject, throttling, warm-up, concurrency, associated,
// shadow mode) and the Entry/Exit API that asks them for a decision.
//
// It imports the standard library only and keeps no global state: a program
// creates one *Engine with New, shares it, and closes it when done.
package engine
