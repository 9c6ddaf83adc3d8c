package sentinelgo_test

import (
	"context"
	"errors"
	"log"
	"os"

	sentinel "github.com/alibaba/sentinel-golang/api"

	"github.com/sluicehq/sluice/bridge/sentinelgo"
	"github.com/sluicehq/sluice/engine/remote"
)

// The lines a sentinel-golang service adds at start-up: its Entry calls
// stay as they are.
func Example() {
	if err := sentinel.InitDefault(); err != nil {
		log.Fatal(err)
	}
	bridge, err := sentinelgo.New(remote.Config{
		ServerURL: "https://sluice.internal:8080",
		Token:     os.Getenv("SLUICE_TOKEN"), // role instance
		App:       "shop",
		CacheDir:  "/var/cache/shop/sluice",
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := bridge.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	defer bridge.Close() // reports the minute in progress

	// Unchanged: the service's sentinel-golang calls.
	e, blocked := sentinel.Entry("checkout")
	if blocked != nil {
		log.Print("busy: ", blocked.BlockMsg())
		return
	}
	defer e.Exit()
	if err := checkout(); err != nil {
		sentinel.TraceError(e, err)
	}
}

func checkout() error { return errors.New("payment declined") }
