// Package remote runs an engine whose rules come from a Sluice server and
// whose traffic goes back to it, as Sentinel's clients do with its
// dashboard: a Go service embeds a Client, calls Entry on its Engine, and
// the Client long-polls the server's rule snapshot for the service's app
// (GET /api/v1/rules/snapshot), loading each new set as a full replacement
// and keeping the last good one on disk, and posts the engine's finished
// minutes and live figures every second (POST /api/v1/instances/report).
// NewWith does the same for rules and figures of the caller's own (Hooks),
// as bridge/sentinelgo does for sentinel-golang.
// It imports the standard library and the engine only.
package remote
