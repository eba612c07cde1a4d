package archive_test

import (
	"testing"

	"github.com/edgeindex/edgeindex/archive"
)

// FuzzInspect: whatever bytes a provider sends as an archive's first
// volume, Inspect answers a format and a password attr Newznab defines,
// or an error, reading only what the data holds and never panicking. The
// seed corpus (testdata/fuzz/FuzzInspect) holds small archives made by
// 7-Zip and Info-ZIP, plain and encrypted.
func FuzzInspect(f *testing.F) {
	f.Add([]byte("Rar!\x1a\x07\x00"))
	f.Add(cat([]byte(rar4Sig), rar4Block(0x73, 0, make([]byte, 6)), rar4File("a.mkv", 0x0004, nil)))
	f.Add(cat([]byte(rar5Sig), rar5Header(1, vint(0), nil), rar5File("movie.mkv", true)))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := inspect(data)
		if err != nil {
			return
		}
		if info.Password < archive.None || info.Password > archive.Potentially {
			t.Fatalf("password %d", info.Password)
		}
		if len(info.FirstFile) > len(data) {
			t.Fatalf("a name of %d bytes from %d", len(info.FirstFile), len(data))
		}
	})
}
