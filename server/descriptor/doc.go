// Package descriptor names the resources that Envoy's rate limit
// descriptors are counted under, for the rate limit service (server/rls)
// and the import of envoyproxy/ratelimit configuration alike: a
// configuration node of a domain is the resource
//
//	<domain>:<key>=<value>/<key>/…
//
// one segment per descriptor entry from the top, "key=value" for an entry
// with a value and "key" for one without (any value: one count per value,
// a hotspot rule's). Domain, keys and values escape "%", "/", "=", ":"
// and control characters as %XX, so every name parses back (Parse). See
// docs/envoy.md.
package descriptor
