// Package guardtest is what the tests of the net/http and Fiber middleware
// share: an engine on a manual clock, a client, and readers of a block
// answer and of a resource's figures. Only tests import it.
package guardtest
