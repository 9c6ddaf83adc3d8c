//go:build cgo

package store

import "testing"

// TestConnectionsMapTheFile: every connection reads the file through a
// memory map of mmapSizeBytes.
func TestConnectionsMapTheFile(t *testing.T) {
	s, _ := openSQLiteTestStore(t)
	var size int64
	if err := sqlDB(t, s).QueryRowContext(t.Context(), "PRAGMA mmap_size").Scan(&size); err != nil {
		t.Fatal(err)
	}
	if size != mmapSizeBytes {
		t.Errorf("mmap_size = %d, want %d", size, mmapSizeBytes)
	}
}
