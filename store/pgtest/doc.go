// Package pgtest runs a throwaway PostgreSQL server for tests: Debian's
// postgresql binaries (make postgres installs them), a cluster
// initialised in a temporary directory, listening on loopback only with
// trust authentication, and removed when the tests stop. PostgreSQL
// refuses to run as root, so under root the server runs as the postgres
// user the package creates. A package's TestMain starts one server; each
// test takes a database of its own from it.
package pgtest
