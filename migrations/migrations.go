package migrations

import "embed"

// FS holds every migration of this directory, applied in version order by
// the store at start-up.
//
//go:embed *.sql
var FS embed.FS
