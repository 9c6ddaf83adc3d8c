// Package shop is a small shop service that Sluice protects the way a
// fleet's services are protected: its routes are guarded by the net/http
// middleware on the engine of an engine/remote client, which takes its
// rules from a Sluice server and reports the traffic back. The
// sluice-example command serves it as a process of its own, and sluice
// --demo runs a few in-process, so that the console shows a fleet.
package shop
