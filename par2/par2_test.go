package par2_test

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/par2"
)

// The files testdata/index.par2 was made over by par2cmdline
// (par2 create -s4000 -r5 -n1 index.par2 *.mkv *.nfo *.txt), with these
// contents.
var fixture = map[string][]byte{
	"My.Movie.2024.1080p.BluRay.x264-GRP.mkv": pattern(40000, 7, 251),
	"My.Movie.2024.1080p.BluRay.x264-GRP.nfo": []byte("Title: My Movie\r\n"),
	"Über Grün.txt":                           pattern(100, 13, 253),
}

func pattern(n, mul, mod int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * mul % mod)
	}
	return b
}

func TestParseIndex(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"index.par2", "index.vol0+1.par2"} {
		data, err := os.ReadFile("testdata/" + name)
		require.NoError(t, err)
		s, err := par2.Parse(data)
		require.NoError(t, err, name)
		require.Equal(t, uint64(4000), s.SliceSize, name)
		require.Len(t, s.Files, 3, name)
		require.Zero(t, s.Refused, name)
		for _, f := range s.Files {
			content, ok := fixture[f.Name]
			require.True(t, ok, "%s: a file named %q", name, f.Name)
			require.True(t, f.InOrder)
			require.Equal(t, uint64(len(content)), f.Length, f.Name)
			require.Equal(t, md5.Sum(content), f.MD5, f.Name)
			require.Equal(t, md5.Sum(content[:min(len(content), 16<<10)]), f.MD516k, f.Name)
		}
	}
}

// A first segment cuts the file: the packets before the cut are read.
func TestParseCut(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/index.par2")
	require.NoError(t, err)
	whole, err := par2.Parse(data)
	require.NoError(t, err)
	cut := 0
	for n := len(data) - 1; n > 0; n-- {
		s, err := par2.Parse(data[:n])
		if err != nil {
			require.True(t, errors.Is(err, par2.ErrCorrupt) || errors.Is(err, par2.ErrNotPAR2), "cut at %d: %v", n, err)
			continue
		}
		require.LessOrEqual(t, len(s.Files), len(whole.Files))
		if len(s.Files) < len(whole.Files) {
			cut++
		}
	}
	require.Positive(t, cut, "some cuts leave files out")
}

// packet builds a PAR2 packet of typ and body in set, its MD5 right.
func packet(set [16]byte, typ string, body []byte) []byte {
	p := make([]byte, 64, 64+len(body))
	copy(p, "PAR2\x00PKT")
	binary.LittleEndian.PutUint64(p[8:], uint64(64+len(body)))
	copy(p[32:], set[:])
	copy(p[48:], typ)
	p = append(p, body...)
	sum := md5.Sum(p[32:])
	copy(p[16:], sum[:])
	return p
}

func fileDesc(id byte, name string, length uint64) []byte {
	b := make([]byte, 56)
	b[0] = id
	binary.LittleEndian.PutUint64(b[48:], length)
	b = append(b, name...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// Hostile data: each refused with the error that says why, and a bad
// packet beside good ones costs only itself.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	set := [16]byte{1}
	good := packet(set, "PAR 2.0\x00FileDesc", fileDesc(1, "real.name.mkv", 10))

	huge := packet(set, "PAR 2.0\x00FileDesc", fileDesc(2, "x", 1))
	binary.LittleEndian.PutUint64(huge[8:], 4<<30) // claims 4 GB
	_, err := par2.Parse(huge)
	require.ErrorIs(t, err, par2.ErrTooLarge)

	badSum := packet(set, "PAR 2.0\x00FileDesc", fileDesc(3, "y", 1))
	badSum[70] ^= 1
	_, err = par2.Parse(badSum)
	require.ErrorIs(t, err, par2.ErrCorrupt)

	short := packet(set, "PAR 2.0\x00FileDesc", nil)
	binary.LittleEndian.PutUint64(short[8:], 8) // shorter than a header
	_, err = par2.Parse(short)
	require.ErrorIs(t, err, par2.ErrCorrupt)

	_, err = par2.Parse([]byte("Rar!\x1a\x07\x00 not a par2"))
	require.ErrorIs(t, err, par2.ErrNotPAR2)

	noName := packet(set, "PAR 2.0\x00FileDesc", fileDesc(4, "", 1))
	manyFiles := make([]byte, 12)
	binary.LittleEndian.PutUint64(manyFiles, 4)
	binary.LittleEndian.PutUint32(manyFiles[8:], 1<<30) // a main packet of a billion files
	main := packet(set, "PAR 2.0\x00Main\x00\x00\x00\x00", manyFiles)
	other := packet([16]byte{2}, "PAR 2.0\x00FileDesc", fileDesc(5, "other.set", 1))

	var all []byte
	for _, p := range [][]byte{huge[:64], badSum, short[:64], noName, main, other, good} {
		all = append(all, p...)
	}
	s, err := par2.Parse(all)
	require.NoError(t, err)
	require.Len(t, s.Files, 1)
	require.Equal(t, "real.name.mkv", s.Files[0].Name)
	require.False(t, s.Files[0].InOrder, "the main packet was refused")
	require.Zero(t, s.SliceSize)
	require.Equal(t, 5, s.Refused, "the huge, the bad sum, the short, the nameless and the main")
}
