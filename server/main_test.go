package server

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/server/servertest"
)

// TestMain runs the tests on SQLite files, or on PostgreSQL with
// SLUICE_TEST_DB=postgres (servertest.Main).
func TestMain(m *testing.M) { os.Exit(servertest.Main(m)) }
