// Package metrics is Sluice's metric pipeline: it collects what the engine
// counted, minute by minute, flushes it to the store's minute and hour
// rows, adds to the same figures the minutes and live figures that
// instances report, prunes them past retention, and answers the reads of
// the figures (history, top resources, the resource list, the live figures
// and the Prometheus exposition), stored and not yet flushed alike. It
// holds no HTTP types: the server decodes a request, calls it and encodes
// the answer.
package metrics
