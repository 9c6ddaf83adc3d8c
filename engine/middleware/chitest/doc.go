// Package chitest tests the net/http guard behind a real chi router. It is
// a module of its own, so that the sluice module, and with it every
// net/http service, never requires chi: its tests run from this folder
// (go test ./... here), not from the repository's root.
package chitest
