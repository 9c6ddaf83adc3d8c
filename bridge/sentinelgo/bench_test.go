package sentinelgo_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	sentinel "github.com/alibaba/sentinel-golang/api"

	"github.com/sluicehq/sluice/bridge/sentinelgo"
	"github.com/sluicehq/sluice/engine/remote"
)

// BenchmarkEntry is what the Bridge's stat slot adds to a passing
// sentinel-golang entry: sentinel-golang alone, then with a Bridge
// counting (its server away: the reports do not matter here).
func BenchmarkEntry(b *testing.B) {
	run := func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if e, blocked := sentinel.Entry("bench"); blocked == nil {
					e.Exit()
				}
			}
		})
	}
	b.Run("sentinel", run)
	b.Run("bridged", func(b *testing.B) {
		bridge, err := sentinelgo.New(remote.Config{ServerURL: "http://127.0.0.1:1", App: "bench",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		if err := bridge.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		defer bridge.Close()
		run(b)
	})
}
