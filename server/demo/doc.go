// Package demo is sluice --demo: it seeds a few rules through the rule
// domain's public API and drives synthetic traffic through the engine, and
// it runs a fleet of shop services (package shop) in-process as instances
// that report to the server, so that a first look at the console shows
// resources, blocks, moving charts and instances.
package demo
