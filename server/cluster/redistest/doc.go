// Package redistest runs a throwaway redis-server for tests: Debian's
// binary (make redis installs it), listening on a free loopback port, with
// its directory in t.TempDir() and no persistence, killed when the test
// ends. Debian's own redis service, if any, plays no part.
package redistest
