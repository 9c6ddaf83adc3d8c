//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// fileWritable fails unless the process may write the SQLite database's
// file and its WAL and shared-memory files, by access(2), which opens
// nothing: closing a descriptor of the file would drop SQLite's fcntl
// locks. The writer's connection opened them before, so once one is made
// immutable (chattr +i) or its file system read-only, the transaction of
// a write may still go to the WAL, but the checkpoint that must copy it
// into the file fails, and a restart opens the database read-only.
func (b *backend) fileWritable() error {
	if b.file == "" {
		return nil
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		path := b.file + suffix
		if err := unix.Access(path, unix.W_OK); err != nil && (suffix == "" || !errors.Is(err, os.ErrNotExist)) {
			return fmt.Errorf("%s cannot be written: %w", path, err)
		}
	}
	return nil
}
