// Command sluice-bench holds the tools behind the check API's benchmark
// figures (see README.md beside it):
//
//	sluice-bench hello [-addr :8081]
//	sluice-bench accuracy [-server http://127.0.0.1:8080] [-threshold 100] [-duration 10s] [-workers 16 | -rate 150] [-warmup]
//	sluice-bench cardinality -pid PID [-server http://127.0.0.1:8080] [-names 1000000]
//	sluice-bench propagation [-server …] [-example ./sluice-example] [-instances 20] [-changes 30]
//	sluice-bench reporters [-server …] [-instances 500] [-resources 10] [-duration 65s] [-minute-spread 20s] [-server-pid PID]
//	sluice-bench instance-overhead [-server …] [-rate 10000] [-duration 30s]
//	sluice-bench cluster [-redis redis://…] [-accuracy 15s] [-outage-up 5s] [-outage-down 5s] [-cost 10s] [-cost-rate 10000]
//	sluice-bench replicas [-sluice ./sluice] [-changes 50]
//	sluice-bench adaptive [-capacity 20] [-base-ms 20] [-overload 3] [-duration 5s] [-warmup 5s]
//
// hello serves the HTTP ceiling of the machine: a Fiber handler answering a
// POST with a fixed 60-byte JSON. accuracy creates a reject rule through a
// running server's API, hammers POST /check for the duration (or sends it
// evenly paced), and reports the most passes any one-second window held
// and the passes of each second. cardinality sends checks on
// ever new names and reports the server's resident memory as they add up,
// then what a scrape, a stream tick and a resource list cost.
// adaptive offers an in-process service three times the calls it
// completes, with and without an adaptive concurrency rule, and reports
// the served calls' p99 beside its no-load p99.
// propagation, reporters and instance-overhead are the fleet's figures
// (fleet.go): a rule change reaching every sluice-example process, the
// server under many reporting instances, and what an instance pays for
// its sync and reports. cluster is the cluster rules' figures (cluster.go):
// a global 1,000/s rule over 4 engines on one Redis, held per second, across
// a Redis kill, and what a decision on it costs. replicas (replicas.go) is
// how long a rule written on one of three replicas on one PostgreSQL takes
// to reach the other two.
package main
