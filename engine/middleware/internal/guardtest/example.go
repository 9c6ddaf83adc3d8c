package guardtest

import (
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/engine"
)

// Examples have no *testing.T: what fails in these panics.

// ExampleEngine returns an engine with rules loaded for resource.
func ExampleEngine(rules engine.ResourceRules, resource string) *engine.Engine {
	eng := engine.New(engine.Options{})
	rules.Resources = []string{resource}
	if err := eng.LoadResourceRules(rules); err != nil {
		panic(err)
	}
	return eng
}

// PrintHeaderStatuses sends GET base+path once per value, with the header
// set to it (none for ""), and prints the value and the status.
func PrintHeaderStatuses(base, path, header string, values ...string) {
	for _, v := range values {
		fmt.Printf("%q %d\n", v, status(base+path, header, v))
	}
}

// PrintPathStatuses sends GET base+path for each path and prints the path
// and the status.
func PrintPathStatuses(base string, paths ...string) {
	for _, p := range paths {
		fmt.Println(p, status(base+p, "", ""))
	}
}

func status(url, header, value string) int {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		panic(err)
	}
	if value != "" {
		req.Header.Set(header, value)
	}
	resp, err := Client.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
