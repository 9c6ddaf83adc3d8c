// Command sluice runs the Sluice control plane: the REST API, the Swagger UI
// and the console over one flow-control engine and a SQLite or PostgreSQL
// database, with its demo, rule file and admin commands beside it.
//
// Usage:
//
//	sluice [serve] [flags]
//	sluice demo [flags]
//	sluice rules apply -f FILE [flags]
//	sluice rules import -f FILE --format sentinel|envoy [flags]
//	sluice rules export [flags]
//	sluice admin reset-password USER [flags]
//	sluice help [command]
//
// Every flag has an environment twin: --addr is SLUICE_ADDR, --db is
// SLUICE_DB, --log-level is SLUICE_LOG_LEVEL. Run sluice help for the
// commands and serve's flags, sluice help rules apply for a command's.
// It exits 0 on success (--help included), 1 on an error (a usage error
// included) and 2 when a dry run of rules apply or rules import found
// changes to make.
package main
