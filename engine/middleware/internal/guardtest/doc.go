// Package guardtest is what the tests of the net/http and Fiber middleware
// share: an engine on a manual clock, a client, readers of a block answer
// and of a resource's figures, and the cases every middleware runs (the
// extractors', the rate-limit headers'). Only tests import it.
package guardtest
