package coordinator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgeindex/edgeindex/internal/chunkfile"

	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// snapshotFiles keeps snapshot bytes as <dir>/<group id>-<lane>-<next>-<token>.gz.
// Names hold only numbers and a lane: no group name becomes a path.
type snapshotFiles struct{ dir string }

func openSnapshotFiles(dir string) (snapshotFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return snapshotFiles{}, fmt.Errorf("coordinator: snapshots: %w", err)
	}
	// Writes a crash cut short are never read: remove them.
	leftovers, _ := filepath.Glob(filepath.Join(dir, chunkfile.TempPrefix+"*"))
	for _, l := range leftovers {
		os.Remove(l)
	}
	return snapshotFiles{dir: dir}, nil
}

func (f snapshotFiles) prefix(group int64, ln lease.Lane) string {
	return fmt.Sprintf("%d-%s-", group, ln)
}

func (f snapshotFiles) path(group int64, ln lease.Lane, s grouplease.Snapshot) string {
	return filepath.Join(f.dir, fmt.Sprintf("%s%d-%d.gz", f.prefix(group, ln), s.Next, s.Token))
}

// write stores the bytes atomically: temporary file, fsync, rename, fsync dir.
func (f snapshotFiles) write(group int64, ln lease.Lane, s grouplease.Snapshot, body []byte) error {
	if err := chunkfile.WriteAtomic(f.dir, f.path(group, ln, s), body); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

func (f snapshotFiles) open(group int64, ln lease.Lane, s grouplease.Snapshot) (*os.File, error) {
	file, err := os.Open(f.path(group, ln, s))
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return file, nil
}

// prune removes the lane's files other than the current one.
func (f snapshotFiles) prune(group int64, ln lease.Lane, cur grouplease.Snapshot) {
	keep := filepath.Base(f.path(group, ln, cur))
	entries, _ := os.ReadDir(f.dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), f.prefix(group, ln)) && e.Name() != keep {
			os.Remove(filepath.Join(f.dir, e.Name()))
		}
	}
}
