// Package benchmarks compares Sluice's engine with alibaba/sentinel-golang,
// the library whose ideas it rewrites, on the same workloads in the same
// process.
//
// It is a nested module (github.com/sluicehq/sluice/engine/benchmarks) so
// that the main module never depends on sentinel-golang: only this module
// requires it, and it reaches the engine through a replace directive that
// points at the repository root.
//
// The side-by-side Go benchmarks are in compare_test.go. Their sub-benchmarks
// are named engine=sluice, engine=sluice-handle and engine=sentinel, so that
// benchstat can put the engines in columns:
//
//	cd engine/benchmarks
//	go test -run '^$' -bench . -benchmem -count 5 | tee bench.txt
//	go run golang.org/x/perf/cmd/benchstat@latest bench.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col '/engine@(sentinel sluice sluice-handle)' bench.txt
//
// The wall-clock accuracy figures (passes in any real second of a 100 QPS
// rule hammered by two goroutines, and the spacing of throttled passes) come
// from a command:
//
//	go run ./accuracy -duration 5s
//
// See README.md for what each benchmark measures.
package benchmarks
