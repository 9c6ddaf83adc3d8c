// Command sluice-seed fills a Sluice database with synthetic minute metrics,
// the data set of the metric benchmarks: every resource has traffic in every
// minute of the range, with a daily wave, blocks on some resources, errors
// and response times. On SQLite it writes through the same store path as
// the flusher; on PostgreSQL, whose row-by-row upserts would take hours over
// 10 M rows on a small machine, it writes the same rows by COPY into an
// empty metric history and sums the rollups from them in SQL.
//
// Usage:
//
//	go run ./cmd/sluice-seed --db /tmp/sluice-bench.db --resources 1000 --days 7
//	go run ./cmd/sluice-seed --db postgres://localhost/sluicebench --resources 1000 --days 7
//
// It prints how many rows it wrote, how long it took and, on SQLite, the
// file's size per million minute rows.
package main
