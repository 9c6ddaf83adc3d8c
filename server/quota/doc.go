// Package quota keeps the windows of the server's quota rules (a qps
// window of a minute or more: hour and day quotas) in the store, so that a
// restart does not start them again: Restore gives the saved passes to the
// engine before the rules load, and a Keeper saves them every few seconds
// and once more at shutdown (docs/engine.md#hour-and-day-quotas).
package quota
