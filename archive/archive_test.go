package archive_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/archive"
	"github.com/edgeindex/edgeindex/internal/tooltest"
)

// files writes the test's files into a new directory: a text and, so
// that a 7z archive's header is past a first segment, 300 KB that do not
// compress.
func files(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "movie.mkv"), tooltest.Incompressible(300_000, 2463534242), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "readme.txt"), []byte("hello\n"), 0o600))
	return dir
}

// readCounter is an archive read through ReadAt, counting the bytes.
type readCounter struct {
	r    *bytes.Reader
	read int64
}

func (c *readCounter) ReadAt(p []byte, off int64) (int, error) {
	c.read += int64(len(p))
	return c.r.ReadAt(p, off)
}

func inspect(data []byte) (archive.Info, error) {
	return archive.Inspect(bytes.NewReader(data), int64(len(data)))
}

// Archives made by the real tools, each told apart by its headers alone:
// a 7z archive's at its end, packed by LZMA unless encrypted.
func TestInspectRealArchives(t *testing.T) {
	t.Parallel()
	dir := files(t)
	for _, c := range []struct {
		name, tool, pkg string
		args            []string
		format          archive.Format
		want            archive.Password
	}{
		{"plain.7z", "7z", "p7zip-full", []string{"a", "-bd", "plain.7z", "movie.mkv", "readme.txt"}, archive.SevenZip, archive.None},
		{"files.7z", "7z", "p7zip-full", []string{"a", "-bd", "-psecret", "files.7z", "movie.mkv", "readme.txt"}, archive.SevenZip, archive.Passworded},
		{"headers.7z", "7z", "p7zip-full", []string{"a", "-bd", "-psecret", "-mhe=on", "headers.7z", "movie.mkv", "readme.txt"}, archive.SevenZip, archive.Passworded},
		{"plainheader.7z", "7z", "p7zip-full", []string{"a", "-bd", "-mhc=off", "plainheader.7z", "movie.mkv", "readme.txt"}, archive.SevenZip, archive.None},
		{"plain.zip", "zip", "zip", []string{"-q", "plain.zip", "movie.mkv", "readme.txt"}, archive.ZIP, archive.None},
		{"crypt.zip", "zip", "zip", []string{"-q", "-P", "secret", "crypt.zip", "movie.mkv", "readme.txt"}, archive.ZIP, archive.Passworded},
		{"aes.zip", "7z", "p7zip-full", []string{"a", "-bd", "-tzip", "-mem=AES256", "-psecret", "aes.zip", "movie.mkv"}, archive.ZIP, archive.Passworded},
		{"inner.zip", "zip", "zip", []string{"-q", "inner.zip", "plain.zip"}, archive.ZIP, archive.Potentially},
	} {
		tooltest.Run(t, dir, c.tool, c.pkg, c.args...)
		data, err := os.ReadFile(filepath.Join(dir, c.name))
		require.NoError(t, err)
		r := &readCounter{r: bytes.NewReader(data)}
		info, err := archive.Inspect(r, int64(len(data)))
		require.NoError(t, err, c.name)
		require.Equal(t, c.format, info.Format, c.name)
		require.True(t, info.Known, c.name)
		require.Equal(t, c.want, info.Password, c.name)
		require.Less(t, r.read, int64(archive.HeadBytes+4096), "%s: headers only (%d bytes of %d)", c.name, r.read, len(data))
	}
}

// rar4Block is a RAR 4 block of typ with flags and body, its CRC right.
func rar4Block(typ byte, flags uint16, body []byte) []byte {
	b := make([]byte, 7, 7+len(body))
	b[2] = typ
	binary.LittleEndian.PutUint16(b[3:], flags)
	binary.LittleEndian.PutUint16(b[5:], uint16(7+len(body)))
	b = append(b, body...)
	binary.LittleEndian.PutUint16(b[0:], uint16(crc32.ChecksumIEEE(b[2:])))
	return b
}

// rar4File is a RAR 4 file header of name (with flags), then its packed
// data.
func rar4File(name string, flags uint16, data []byte) []byte {
	body := make([]byte, 25)
	binary.LittleEndian.PutUint32(body[0:], uint32(len(data))) // packed size
	binary.LittleEndian.PutUint16(body[19:], uint16(len(name)))
	body = append(body, name...)
	return append(rar4Block(0x74, flags|0x8000, body), data...)
}

const rar4Sig, rar5Sig = "Rar!\x1a\x07\x00", "Rar!\x1a\x07\x01\x00"

func vint(v uint64) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// rar5Header is a RAR 5 header of typ with its fields and extra area.
func rar5Header(typ uint64, fields, extra []byte) []byte {
	var flags uint64
	var h []byte
	if len(extra) > 0 {
		flags |= 1
	}
	h = append(h, vint(typ)...)
	h = append(h, vint(flags)...)
	if len(extra) > 0 {
		h = append(h, vint(uint64(len(extra)))...)
	}
	h = append(h, fields...)
	h = append(h, extra...)
	sized := append(vint(uint64(len(h))), h...)
	out := binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(sized))
	return append(out, sized...)
}

func rar5File(name string, encrypted bool) []byte {
	var f []byte
	f = append(f, vint(0)...)   // file flags
	f = append(f, vint(100)...) // unpacked size
	f = append(f, vint(0)...)   // attributes
	f = append(f, vint(0)...)   // compression
	f = append(f, vint(0)...)   // host OS
	f = append(f, vint(uint64(len(name)))...)
	f = append(f, name...)
	var extra []byte
	if encrypted {
		rec := append(vint(1), make([]byte, 8)...) // type 1, file encryption
		extra = append(vint(uint64(len(rec))), rec...)
	}
	return rar5Header(2, f, extra)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// RAR, whose tools Debian cannot ship: headers built by the format's
// description.
func TestInspectRAR(t *testing.T) {
	t.Parallel()
	main4 := rar4Block(0x73, 0, make([]byte, 6))
	for _, c := range []struct {
		name      string
		data      []byte
		want      archive.Password
		known     bool
		firstFile string
	}{
		{"rar4 plain", cat([]byte(rar4Sig), main4, rar4File("movie.mkv", 0, []byte("data"))), archive.None, true, "movie.mkv"},
		{"rar4 file encrypted", cat([]byte(rar4Sig), main4, rar4File("movie.mkv", 0x0004, nil)), archive.Passworded, true, "movie.mkv"},
		{"rar4 headers encrypted", cat([]byte(rar4Sig), rar4Block(0x73, 0x0080, make([]byte, 6)), tooltest.Incompressible(64, 2463534242)), archive.Passworded, true, ""},
		{"rar4 inner archive", cat([]byte(rar4Sig), main4, rar4File("inner.rar", 0, nil)), archive.Potentially, true, "inner.rar"},
		{"rar4 comment, then the file", cat([]byte(rar4Sig), main4, rar4Block(0x75, 0, []byte("comment")), rar4File("a.mkv", 0, nil)), archive.None, true, "a.mkv"},
		{"rar4 cut before the file", cat([]byte(rar4Sig), main4), archive.None, false, ""},
		{"rar5 plain", cat([]byte(rar5Sig), rar5Header(1, vint(0), nil), rar5File("movie.mkv", false)), archive.None, true, "movie.mkv"},
		{"rar5 file encrypted", cat([]byte(rar5Sig), rar5Header(1, vint(0), nil), rar5File("movie.mkv", true)), archive.Passworded, true, "movie.mkv"},
		{"rar5 headers encrypted", cat([]byte(rar5Sig), rar5Header(4, make([]byte, 20), nil), tooltest.Incompressible(64, 2463534242)), archive.Passworded, true, ""},
		{"rar5 cut", cat([]byte(rar5Sig), rar5Header(1, vint(0), nil)), archive.None, false, ""},
	} {
		info, err := inspect(c.data)
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, info.Password, c.name)
		require.Equal(t, c.known, info.Known, c.name)
		require.Equal(t, c.firstFile, info.FirstFile, c.name)
	}
}

// Hostile headers answer ErrCorrupt (or what they tell): never a loop, a
// panic or a read past the data.
func TestInspectRefuses(t *testing.T) {
	t.Parallel()
	main4 := rar4Block(0x73, 0, make([]byte, 6))
	badCRC := cat([]byte(rar4Sig), main4)
	badCRC[len(rar4Sig)] ^= 1
	zeroSize := cat([]byte(rar4Sig), []byte{0, 0, 0x75, 0, 0, 0, 0})
	var loop []byte // a header loop: the most blocks of nothing
	for range archive.MaxBlocks + 1 {
		loop = append(loop, rar4Block(0x75, 0, nil)...)
	}
	badRAR5 := cat([]byte(rar5Sig), rar5Header(1, vint(0), nil))
	badRAR5[len(rar5Sig)] ^= 1
	bad7z := []byte("7z\xbc\xaf\x27\x1c\x00\x04" + string(make([]byte, 24)))
	huge7z := []byte("7z\xbc\xaf\x27\x1c\x00\x04\x00\x00\x00\x00")
	huge7z = binary.LittleEndian.AppendUint64(huge7z, 0)
	huge7z = binary.LittleEndian.AppendUint64(huge7z, 4<<30) // a header of 4 GB
	huge7z = binary.LittleEndian.AppendUint32(huge7z, 0)
	binary.LittleEndian.PutUint32(huge7z[8:], crc32.ChecksumIEEE(huge7z[12:32]))
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"7z header of 4 GB", huge7z, archive.ErrCorrupt},
		{"not an archive", []byte("PAR2\x00PKT"), archive.ErrNotArchive},
		{"rar4 bad CRC", badCRC, archive.ErrCorrupt},
		{"rar4 block of 0 bytes", zeroSize, archive.ErrCorrupt},
		{"rar4 header loop", cat([]byte(rar4Sig), loop), archive.ErrCorrupt},
		{"rar5 bad CRC", badRAR5, archive.ErrCorrupt},
		{"7z bad start CRC", append(bad7z, 1), archive.ErrCorrupt},
		{"zip, not a header after a directory", cat([]byte("PK\x03\x04"), make([]byte, 22), []byte{2, 0, 0, 0}, []byte("d/"), []byte("junk junk junk junk junk junk junk")), archive.ErrCorrupt},
	} {
		_, err := inspect(c.data)
		require.ErrorIs(t, err, c.want, c.name)
	}
}

// The first volume of a split 7z archive (7z -v): its header is at the
// end of the last volume, past what Inspect is given, so it tells
// nothing, and says so.
func TestInspect7zSplit(t *testing.T) {
	t.Parallel()
	dir := files(t)
	tooltest.Run(t, dir, "7z", "p7zip-full", "a", "-bd", "-v100k", "-psecret", "-mhe=on", "split.7z", "movie.mkv")
	data, err := os.ReadFile(filepath.Join(dir, "split.7z.001"))
	require.NoError(t, err)
	info, err := inspect(data)
	require.NoError(t, err)
	require.Equal(t, archive.SevenZip, info.Format)
	require.False(t, info.Known)
	require.Equal(t, archive.None, info.Password)
}
