// Package check is the check API: POST /api/v1/check, /check/batch and
// /complete. Its handler decodes a check (a scanner for the usual shapes,
// package codec's strict decoder for the rest, which names every bad
// field), asks the engine without ever sleeping, and answers the decision;
// its lease table holds the entries a concurrency rule counts, and
// half-open breakers' probes, until the client completes them or their
// lease runs out. The server binds the handlers behind its authentication
// and maps this package's errors to HTTP.
package check
