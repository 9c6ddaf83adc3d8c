// Package sentinelgo lets a service that keeps sentinel-golang take its
// rules from a Sluice server and appear on its Instances page: a Bridge
// long-polls the app's rule snapshot (engine/remote's protocol and disk
// cache), loads the rules into sentinel-golang's rule managers, and
// reports the traffic sentinel-golang saw, by minute and over the last
// second, to POST /api/v1/instances/report.
//
// The Bridge owns sentinel-golang's flow, isolation, circuit-breaker,
// hotspot and system rules: each snapshot replaces them all. Rules that
// sentinel-golang cannot express are listed in State and logged, never
// loaded in part. docs/sentinel-bridge.md has the mapping and an example.
package sentinelgo
