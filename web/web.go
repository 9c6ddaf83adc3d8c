package web

import "embed"

// FS holds the console's files, index.html at its root.
//
//go:embed index.html console.css
var FS embed.FS
