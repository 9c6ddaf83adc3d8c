// Command sluice runs the Sluice control plane: the REST API, the Swagger UI
// and the console over one flow-control engine and a SQLite database.
//
// Usage:
//
//	sluice [serve] [flags]
//
// Every flag has an environment twin: --addr is SLUICE_ADDR, --db is
// SLUICE_DB, --log-level is SLUICE_LOG_LEVEL. Run sluice -h for the list.
package main
