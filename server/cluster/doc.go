// Package cluster is the shared count of scope: cluster flow rules
// (engine.ClusterCounter) kept in Redis: every server replica, and every
// instance through its server, leases passes of a rule's threshold from
// the same Redis keys, by Redis's clock, one round trip per exchange.
package cluster
