package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/cluster"
)

// clusterCounter returns the count in Redis at url that cluster rules
// share, or nil without a URL. A Redis that does not answer yet is no
// error: the cluster rules fall back until it does.
func clusterCounter(ctx context.Context, url string, logger *slog.Logger) (*cluster.Redis, error) {
	if url == "" {
		return nil, nil
	}
	cluster.LogTo(logger)
	counter, err := cluster.New(cluster.Options{URL: url})
	if err != nil {
		return nil, fmt.Errorf("--redis: %w", err)
	}
	if err := counter.Ping(ctx); err != nil {
		logger.Warn("cluster: Redis does not answer yet; cluster rules fall back until it does", "error", err)
	}
	return counter, nil
}

// replicaID names this process among the engines that share the cluster
// count.
func replicaID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("server:%s:%d", host, os.Getpid())
}

// quotaNode names the quota windows this server saves: the same host
// serving the same address after a restart continues them.
func quotaNode(addr string) string {
	host, _ := os.Hostname()
	return host + " " + addr
}

// logClusterState logs every change of the cluster rules' state.
func logClusterState(logger *slog.Logger) func(engine.ClusterStateChange) {
	return func(c engine.ClusterStateChange) {
		if c.State == engine.ClusterFallingBack {
			logger.Warn("cluster: Redis is unreachable; cluster rules do what their clusterFallback says", "error", c.Err)
			return
		}
		logger.Info("cluster: Redis answers again; cluster rules are back on the shared count")
	}
}
