package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/internal/redact"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// storageFlag adds --storage, for the commands that read chunks or
// snapshots.
func (m *Main) storageFlag(fs *flag.FlagSet) {
	fs.StringVar(&m.Storage, "storage", os.Getenv("EDGEINDEX_STORAGE"),
		"where chunks and snapshots go: `s3://BUCKET/PREFIX` (default: the data directory)")
}

// create opens the database, making it, and the data directory it is
// in, when there is none: what serve, demo and init do.
func (m *Main) create(ctx context.Context) (*sqlstore.Store, error) {
	if m.store == nil && m.DB == "" {
		if err := m.dataDir(); err != nil {
			return nil, err
		}
	}
	return m.openDB(ctx)
}

// open opens the database that --db or --data names, and fails, making
// nothing, when there is none there: a command other than serve, demo and
// init never makes one, so one run from the wrong directory says so
// rather than writing to a new database no coordinator reads. A SQLite
// database is there when its file is, or may be made when its directory
// is there and holds nothing else of its own (a directory made for it, see
// madeFor); a PostgreSQL database is there when the server has it.
//
// A database that holds tables or views, none of them edgeindex's, is
// refused too (sqlstore.Config.RefuseForeign): a --db that names the wrong
// PostgreSQL database gets no tables added.
func (m *Main) open(ctx context.Context) (*sqlstore.Store, error) {
	if m.store == nil {
		if err := m.checkDatabase(); err != nil {
			return nil, err
		}
	}
	m.Store.RefuseForeign = true
	return m.openDB(ctx)
}

// openDB opens the database (applying the migrations): --db, else
// <data>/edgeindex.db. A SQLite database's files are made 0600.
func (m *Main) openDB(ctx context.Context) (*sqlstore.Store, error) {
	if m.store != nil {
		return m.store, nil
	}
	db := m.dbURL()
	s, err := sqlstore.Open(ctx, db, m.Store)
	if err != nil {
		hint := ""
		if errors.Is(err, sqlstore.ErrForeign) {
			hint = "; point to yours with --db URL or EDGEINDEX_DB, or make a new one with coordinator init"
		}
		return nil, fmt.Errorf("database %s (%s): %w%s", redact.URL(db), m.whereFrom(), err, hint)
	}
	m.DB, m.store = db, s
	if path, ok := strings.CutPrefix(db, "sqlite://"); ok {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			if err := tighten(path+suffix, 0o600); err != nil {
				return nil, fmt.Errorf("database: %w", err)
			}
		}
	}
	return s, nil
}

// dbURL is --db (or EDGEINDEX_DB), else the SQLite database in the data
// directory.
func (m *Main) dbURL() string {
	if m.DB != "" {
		return m.DB
	}
	return "sqlite://" + filepath.Join(m.Data, "edgeindex.db")
}

// checkDatabase fails with edgeindex.ErrNotFound, naming where it looked
// and how to point it elsewhere, when a SQLite database is not there.
func (m *Main) checkDatabase() error {
	path, ok := strings.CutPrefix(m.dbURL(), "sqlite://")
	if !ok {
		return nil // PostgreSQL: the server says whether it has the database
	}
	if _, err := os.Stat(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if ok, err := madeFor(filepath.Dir(path)); err != nil || ok {
		return err
	}
	abs, _ := filepath.Abs(path)
	return noDatabase(fmt.Sprintf("no database at %s (%s); point to yours with --data DIR or EDGEINDEX_DATA, or --db URL or EDGEINDEX_DB, "+
		"or make a new one with coordinator init", cmp.Or(abs, path), m.whereFrom()))
}

// noDatabase is the error of a command that finds no database: it is an
// edgeindex.ErrNotFound.
type noDatabase string

func (e noDatabase) Error() string        { return string(e) }
func (e noDatabase) Is(target error) bool { return target == edgeindex.ErrNotFound }

// whereFrom says which setting named the database checkDatabase looked for.
func (m *Main) whereFrom() string {
	switch {
	case m.DB != "" && m.DB == os.Getenv("EDGEINDEX_DB"):
		return "from EDGEINDEX_DB"
	case m.DB != "":
		return "from --db"
	case m.Data == os.Getenv("EDGEINDEX_DATA"):
		return "in EDGEINDEX_DATA=" + m.Data
	case m.Data == defaultData:
		return "in the default data directory " + defaultData + ", relative to the working directory"
	}
	return "in --data " + m.Data
}

// madeFor reports whether dir is a directory made for a database that is
// not there yet: empty, or holding only an admin.token written ahead. One
// that holds a coordinator's other files (coordinator.id, spool, corpus,
// snapshots) lost its database, and one that is not there was never made.
func madeFor(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if e.Name() != "admin.token" {
			return false, nil
		}
	}
	return true, nil
}

// dataDir makes the data directory, or tightens it, to 0700: it holds the
// database (results, token hashes) and admin.token.
func (m *Main) dataDir() error {
	if err := os.MkdirAll(m.Data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if err := tighten(m.Data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return nil
}

// tighten takes from path's mode every bit that perm does not have; a
// missing path is fine.
func tighten(path string, perm os.FileMode) error {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if mode := info.Mode().Perm(); mode&^perm != 0 {
		return os.Chmod(path, mode&perm)
	}
	return nil
}

// storage is where serve keeps chunks and snapshots.
type storage struct {
	spool  spool.Store
	corpus corpus.Store
	snaps  blobstore.Store
	// bucket is the spool when it is in a bucket: told of the chunks other
	// coordinators store.
	bucket *spool.Bucket
	close  func() error
}

// openStorage opens the spool, the corpus and the snapshots: under the
// data directory, or, with --storage s3://..., in the bucket's spool,
// corpus and snapshots parts.
func (m *Main) openStorage(ctx context.Context, log *slog.Logger) (st storage, err error) {
	var closers []func() error
	st.close = func() error {
		var err error
		for i := len(closers) - 1; i >= 0; i-- {
			err = errors.Join(err, closers[i]())
		}
		return err
	}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	if m.Storage == "" {
		sp, err := spool.Open(filepath.Join(m.Data, "spool"), spool.Config{})
		if err != nil {
			return st, err
		}
		closers = append(closers, sp.Close)
		cp, err := corpus.Open(filepath.Join(m.Data, "corpus"), corpus.Config{})
		if err != nil {
			return st, err
		}
		closers = append(closers, cp.Close)
		st.spool, st.corpus = sp, cp
		st.snaps, err = blobstore.OpenDir(filepath.Join(m.Data, "snapshots"))
		return st, err
	}
	root, err := m.bucket(ctx)
	if err != nil {
		return st, err
	}
	closers = append(closers, root.Close)
	sp, err := spool.OpenBucket(ctx, sub(root, "spool"), spool.BucketConfig{Logger: log})
	if err != nil {
		return st, fmt.Errorf("--storage %s: %w", blobstore.Redact(m.Storage), err)
	}
	closers = append(closers, sp.Close)
	cp, err := corpus.OpenBucket(sub(root, "corpus"), corpus.BucketConfig{})
	if err != nil {
		return st, err
	}
	closers = append(closers, cp.Close)
	st.spool, st.corpus, st.snaps, st.bucket = sp, cp, sub(root, "snapshots"), sp
	return st, nil
}

// bucket opens --storage, an s3:// URL.
func (m *Main) bucket(ctx context.Context) (*blobstore.S3, error) {
	if !strings.HasPrefix(m.Storage, "s3://") {
		return nil, usagef("--storage %q: s3://BUCKET/PREFIX, or none for the data directory", blobstore.Redact(m.Storage))
	}
	root, err := blobstore.OpenURL(ctx, m.Storage)
	if errors.Is(err, edgeindex.ErrInvalid) {
		return nil, usagef("--storage: %v", err)
	}
	return root, err
}

// sub is blobstore.Sub of a part whose name is a valid key.
func sub(root blobstore.Store, dir string) blobstore.Store {
	s, err := blobstore.Sub(root, dir)
	if err != nil {
		panic(err)
	}
	return s
}

// snapshots opens the lanes' snapshots, as serve keeps them: in
// <data>/snapshots, or in the snapshots part of --storage's bucket. The
// caller calls closeFn when done.
func (m *Main) snapshots(ctx context.Context) (_ blobstore.Store, closeFn func() error, _ error) {
	if m.Storage == "" {
		d, err := blobstore.OpenDir(filepath.Join(m.Data, "snapshots"))
		return d, func() error { return nil }, err
	}
	root, err := m.bucket(ctx)
	if err != nil {
		return nil, nil, err
	}
	return sub(root, "snapshots"), root.Close, nil
}
