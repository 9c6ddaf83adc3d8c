// Package instances is the registry of the app processes that embed the
// engine and report to the server: who they are, when they last reported,
// and whether they are live, stale or gone. It keeps the registry in the
// store, and the last report of each instance in memory, so that a report
// a second costs a write only when something but the time changed, or
// every few seconds. It knows nothing of HTTP.
package instances
