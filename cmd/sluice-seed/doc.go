// Command sluice-seed fills a Sluice database with synthetic minute metrics,
// the data set of the metric benchmarks: every resource has traffic in every
// minute of the range, with a daily wave, blocks on some resources, errors
// and response times, written through the same store path as the flusher.
//
// Usage:
//
//	go run ./cmd/sluice-seed --db /tmp/sluice-bench.db --resources 1000 --days 7
//
// It prints how many rows it wrote, how long it took and the file's size per
// million minute rows.
package main
