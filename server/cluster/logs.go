package cluster

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// The Redis client's own log lines (a failed dial, one per attempt while
// Redis is away) go to slog's default logger at debug level, in place of
// the process's standard error: the engine already says, once, when its
// cluster rules fall back and when they come back.
func init() { redis.SetLogger(slogPrintf{}) }

// LogTo sends the Redis client's own log lines to logger, at debug level.
// The Redis client has one logger per process, so this applies to every
// counter.
func LogTo(logger *slog.Logger) { redis.SetLogger(slogPrintf{logger}) }

// slogPrintf is the Redis client's logging interface on a slog.Logger,
// slog's default one if nil.
type slogPrintf struct{ logger *slog.Logger }

func (l slogPrintf) Printf(ctx context.Context, format string, v ...any) {
	logger := l.logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
