package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"

	"github.com/edgeindex/edgeindex/nzb"
)

var nzbCommand = command{name: "nzb", args: "ID", summary: "write a release's NZB to stdout, or to a file with -o", setup: (*Main).nzbFlags}

// nzbFlags adds nzb's flags; it writes a release's NZB to stdout or to a
// file.
func (m *Main) nzbFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	out := fs.String("o", "", "write the NZB to this `file` (default: stdout)")
	return func(ctx context.Context, pos []string) error {
		raw, err := oneArg("nzb", "ID", pos)
		if err != nil {
			return err
		}
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id < 1 {
			return usagef("nzb: %q is not a release id", raw)
		}
		store, err := m.open(ctx)
		if err != nil {
			return err
		}
		r, err := store.ReleaseByID(ctx, id)
		if err != nil {
			return err
		}
		if *out == "" || *out == "-" {
			return nzb.Write(m.Stdout, r)
		}
		return writeFile(*out, func(f *os.File) error { return nzb.Write(f, r) })
	}
}

// writeFile writes path through a temporary file in its directory, synced
// and renamed, so a failed write leaves no half a file.
func writeFile(path string, write func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
