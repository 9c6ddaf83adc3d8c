package store

import (
	"testing"

	"github.com/sluicehq/sluice/store/pgtest"
)

// TestPostgresSessionsRunWithoutParallelWorkers opens a store on a real
// PostgreSQL: its sessions start no parallel workers, unless the URL sets
// max_parallel_workers_per_gather, which then wins.
func TestPostgresSessionsRunWithoutParallelWorkers(t *testing.T) {
	pg := testPostgres
	if pg == nil {
		pg = pgtest.StartForTest(t)
	}
	url := pg.NewDatabase(t)
	for _, tt := range []struct{ url, want string }{
		{url, "0"},
		{url + "&max_parallel_workers_per_gather=2", "2"},
	} {
		s, err := Open(t.Context(), tt.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := s.db.WithContext(t.Context()).Raw("SHOW max_parallel_workers_per_gather").Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%s: max_parallel_workers_per_gather = %s, want %s", tt.url, got, tt.want)
		}
	}
}
