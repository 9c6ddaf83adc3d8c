package web

import "embed"

// FS holds the console's files: index.html, the style sheet and the
// favicon at its root, the ES modules under js/ and the vendored chart
// library under vendor/.
//
//go:embed index.html console.css favicon.svg js vendor
var FS embed.FS
