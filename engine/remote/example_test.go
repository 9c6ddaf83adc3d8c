package remote_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/sluicehq/sluice/engine/remote"
)

// A service embeds a Client: its engine runs the rules the server holds
// for the service's app, and its traffic is reported back to the server.
func Example() {
	sluice := standInServer() // in production: https://sluice.internal:8080
	defer sluice.Close()
	cacheDir, err := os.MkdirTemp("", "sluice-rules")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(cacheDir)

	client, err := remote.New(remote.Config{
		ServerURL: sluice.URL,
		Token:     "slc_...", // a token of role instance
		App:       "shop",
		CacheDir:  cacheDir, // the last good rules, for a restart without the server
		Version:   "1.4.2",
	})
	if err != nil {
		panic(err)
	}
	if err := client.Start(context.Background()); err != nil {
		panic(err)
	}
	defer client.Close() // posts the figures of the current minute

	select {
	case <-client.Ready():
	case <-time.After(5 * time.Second):
		fmt.Println("no rules yet: the server is away and nothing is cached")
	}
	eng := client.Engine()
	for i := range 3 {
		e, blk := eng.Entry("orders")
		if blk != nil {
			fmt.Printf("call %d blocked by %s\n", i, blk.Rule())
			continue
		}
		e.Exit()
		fmt.Printf("call %d passed\n", i)
	}
	fmt.Println("rules revision", client.State().Revision)
	// Output:
	// call 0 passed
	// call 1 passed
	// call 2 blocked by orders-qps
	// rules revision 1
}

// standInServer is a test server standing in for Sluice in the example:
// revision 1 of the rules is a flow rule letting 2 calls a second through
// to orders; reports are taken and thrown away.
func standInServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/v1/instances/report":
			w.WriteHeader(http.StatusNoContent)
		case r.Header.Get("If-None-Match") == `"1"`:
			select { // the long poll: nothing changes
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
			w.WriteHeader(http.StatusNotModified)
		default:
			w.Header().Set("ETag", `"1"`)
			io.WriteString(w, `{"revision": 1, "rules": [
				{"name": "orders-qps", "kind": "flow", "resource": "orders", "threshold": 2}]}`)
		}
	}))
}
