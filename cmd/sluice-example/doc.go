// Command sluice-example is a small shop service that Sluice protects the
// way a fleet's services are protected: it embeds the engine
// (engine/remote), takes its rules from a Sluice server, guards its HTTP
// routes with the net/http middleware and reports its traffic back. Run a
// few of them against one server and the console shows a fleet.
//
// Usage:
//
//	sluice-example [-addr 127.0.0.1:8090] [-server http://127.0.0.1:8080]
//	               [-token TOKEN] [-app shop] [-cache-dir DIR] [-traffic N]
//	               [-capacity 20] [-search-ms 50] [-search-clients N]
//
// The token (or $SLUICE_TOKEN) is an API token of role instance. The
// routes are package shop's (server/demo/shop): GET /orders,
// GET /orders/{id} and POST /checkout, guarded, and GET /sluice/state.
// With -traffic N the service calls its own routes N times a second, so
// that its rules have traffic to act on.
//
// GET /search, guarded too, is a backend of a capacity that changes at run
// time, for an adaptiveConcurrency rule on "GET /search" to find: -capacity
// calls at once take -search-ms each, more queue (each takes -search-ms ×
// in flight ÷ capacity); PUT /sluice/capacity?calls=N changes the capacity;
// -search-clients N runs N clients that call it in a closed loop.
package main
