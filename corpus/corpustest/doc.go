// Package corpustest is the conformance suite for corpus.Store, in the
// style of River's riverdrivertest: every on-disk corpus runs the same
// cases.
//
//	func TestDisk(t *testing.T) {
//		corpustest.Run(t, func(t *testing.T, dir string) corpus.Store {
//			d, err := corpus.Open(dir, corpus.Config{})
//			require.NoError(t, err)
//			t.Cleanup(func() { d.Close() })
//			return d
//		})
//	}
//
// The suite reopens a directory to test restarts, so open may be called
// more than once with the same dir; the suite closes a store before it
// reopens its directory, and Close must be safe to call twice. The crash
// and escaping cases look at the files, so they assume the layout of
// corpus.ChunkPath and the corpus.TempPrefix naming of files being written;
// RunStore leaves them out, for a store that keeps no files (the Bucket
// corpus on an object store: dir is then a name for a prefix).
package corpustest
