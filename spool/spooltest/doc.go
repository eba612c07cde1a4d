// Package spooltest is the conformance suite for spool.Store, in the style
// of River's riverdrivertest: every on-disk spool runs the same cases.
//
//	func TestDisk(t *testing.T) {
//		spooltest.Run(t, func(t *testing.T, dir string) spool.Store {
//			d, err := spool.Open(dir, spool.Config{})
//			require.NoError(t, err)
//			t.Cleanup(func() { d.Close() })
//			return d
//		})
//	}
//
// The suite reopens a directory to test restarts, so open may be called
// more than once with the same dir; the suite closes a store before it
// reopens its directory, and Close must be safe to call twice. The crash
// and file cases write and look at files by hand, so they assume the
// layout of spool.ChunkPath and the spool.TempPrefix naming of files being
// written; RunStore leaves them out, for a store that keeps no files (the
// Bucket spool on an object store: dir is then a name for a prefix).
//
// RunShared runs the cases of a store that several coordinators share:
// open with the same dir is another coordinator on the same bucket.
package spooltest
