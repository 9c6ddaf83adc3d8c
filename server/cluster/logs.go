package cluster

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// LogTo sends the Redis client's own log lines (a failed dial, one per
// attempt while Redis is away) to logger at debug level, in place of the
// process's standard error: the engine already logs, once, when its
// cluster rules fall back and when they come back. The Redis client has
// one logger per process, so this applies to every counter.
func LogTo(logger *slog.Logger) { redis.SetLogger(slogPrintf{logger}) }

// slogPrintf is the Redis client's logging interface on a slog.Logger.
type slogPrintf struct{ logger *slog.Logger }

func (l slogPrintf) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
