// Package server is Sluice's control plane over HTTP: the Fiber application
// with the versioned REST API under /api/v1, its authentication (sessions,
// API tokens, roles and per-app scopes), the one error envelope every
// failure is written in, the live stream, the Swagger UI and the embedded
// console. Its handlers decode a request, call a domain package (rules,
// metrics, instances, cluster) and encode the answer; codec holds their
// strict decoders and fast encoders, and check is the check API, which the
// server binds behind its authentication. It shares the engine and the store
// that the caller created and never closes them.
package server

// The comment below is the API's general information for swag, which
// builds docs/ from it and from the handlers' annotations (make docs).
//
//	@title						Sluice API
//	@version					1.0
//	@description				Flow control (rate limiting and circuit breaking) with rules kept in a database. Every route answers a method it does not take 405, in the error envelope, with an Allow header naming those it takes; every failure is the error envelope (docs/api.md).
//	@BasePath					/
//	@securityDefinitions.apikey	BearerAuth
//	@in							header
//	@name						Authorization
//	@description				An API token, sent as "Bearer <token>".
