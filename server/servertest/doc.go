// Package servertest starts a Sluice server for a test the way the binary
// runs one: a real SQLite file, an engine, a real TCP listener and the
// bootstrap admin token, with clients that talk to it, and a graceful stop
// when the test ends. Like net/http/httptest it does not build the server:
// the caller does, in a callback, so that package server's own tests use it
// too (an import of package server here would be a cycle).
package servertest
