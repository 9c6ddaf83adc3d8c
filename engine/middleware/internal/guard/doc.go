// Package guard is the code the net/http and Fiber middleware share and
// keep to themselves: the default block answer's body, the errors recorded
// for failed calls, the cache of each route's resource, and the param keys
// and parsing of the origin and param extractors. It imports no
// framework, so that the net/http middleware links no Fiber.
package guard
