// Package guard is the code the framework middleware share and keep to
// themselves: the default block answer's body, the errors recorded for
// failed calls, the cache of each route's resource, and the origin and
// param extractors, which read a framework's request through the small
// Request interface each middleware implements. It imports no framework,
// so that the net/http middleware links no Fiber.
package guard
