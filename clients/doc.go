// Package clients tests the OpenAPI document (docs/swagger.json) the way the
// API's users consume it: make clients converts it to OpenAPI 3 with
// swagger2openapi, generates a Go client with oapi-codegen and TypeScript
// types with openapi-typescript (into gen/, build output that git ignores),
// type-checks plan.ts against those types, and runs this package's tests,
// which drive a real server through the generated Go client. A module of its
// own, so that the root module does not depend on the generators.
package clients
