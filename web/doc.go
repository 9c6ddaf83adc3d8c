// Package web is the Sluice console: static HTML, CSS and JavaScript embedded
// into the binary and served by the server at "/". It needs no Node build
// step, so a fresh clone builds with the Go toolchain alone.
package web
