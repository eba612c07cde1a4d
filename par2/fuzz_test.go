package par2_test

import (
	"os"
	"testing"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex/par2"
)

// FuzzParse: whatever a provider sends, Parse returns files whose names
// are bounded, valid UTF-8 and not empty, no more of them than the data
// could hold, or an error; it never panics.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/index.par2", "testdata/index.vol0+1.par2"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add(packet([16]byte{9}, "PAR 2.0\x00FileDesc", fileDesc(1, "a.mkv", 3)))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := par2.Parse(data)
		if err != nil {
			return
		}
		if len(s.Files)*(64+56+4) > len(data) {
			t.Fatalf("%d files from %d bytes", len(s.Files), len(data))
		}
		for _, f := range s.Files {
			if f.Name == "" || len(f.Name) > 3*par2.MaxName || !utf8.ValidString(f.Name) {
				t.Fatalf("name %q", f.Name)
			}
		}
	})
}
