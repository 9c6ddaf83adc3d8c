// Package check is the check API (POST /api/v1/check, /check/batch and
// /complete) short of HTTP: it decodes a body (codec's Scanner for the
// usual shapes, codec's strict Object for the rest, which names every bad
// field), asks the engine without ever sleeping, and writes the answer's
// JSON; its lease table holds the entries a concurrency rule counts, and
// half-open breakers' probes, until the client completes them or their
// lease runs out. The server's handlers pass it the bodies behind their
// authentication and map its errors to statuses; it holds no Fiber types.
package check
