package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path"
	"strings"

	"github.com/ulikunitz/xz/lzma"
)

// Errors of Inspect.
var (
	// ErrNotArchive means the data starts with no signature Inspect
	// knows.
	ErrNotArchive = errors.New("archive: not a RAR, 7z or ZIP archive")
	// ErrCorrupt means a header does not hold together: a CRC that does
	// not match, a size past the data, too many blocks.
	ErrCorrupt = errors.New("archive: corrupt header")
)

// Format is an archive's format.
type Format string

// The formats Inspect knows.
const (
	RAR4     Format = "rar4"
	RAR5     Format = "rar5"
	SevenZip Format = "7z"
	ZIP      Format = "zip"
)

// Password is the Newznab password attr of a release.
type Password int

// The values of the Newznab password attr.
const (
	None        Password = 0 // no password
	Passworded  Password = 1 // the archive is encrypted
	Potentially Password = 2 // an archive inside the archive may be
)

// Info is what Inspect read of an archive.
type Info struct {
	Format   Format
	Password Password
	// Known says the data held what tells: a file entry, or the
	// encryption of the headers. Without it Password is None for want
	// of knowing.
	Known bool
	// FirstFile is the name of the first file entry read, when one was.
	FirstFile string
}

// MaxBlocks bounds the blocks Inspect walks before it gives up.
const MaxBlocks = 256

// Max7zHeader bounds the header a 7z archive may claim, packed or not.
const Max7zHeader = 4 << 20

var (
	sigRAR4 = []byte("Rar!\x1a\x07\x00")
	sigRAR5 = []byte("Rar!\x1a\x07\x01\x00")
	sig7z   = []byte("7z\xbc\xaf\x27\x1c")
	sigZIP  = []byte("PK\x03\x04")
	sigSpan = []byte("PK\x07\x08") // a split ZIP's first bytes
)

// HeadBytes is the most of an archive's start Inspect reads for RAR and
// ZIP headers. It reads the first 4 KiB first, which holds them but for
// long comments, and the rest only when those end before they tell:
// through a ReaderAt over a post's segments, each read past the first
// segment costs a body.
const HeadBytes = 64 << 10

// firstBytes is what Inspect reads first.
const firstBytes = 4 << 10

// Inspect reads the headers of the archive r of size bytes, an archive's
// first volume: its first bytes for RAR and ZIP (see HeadBytes), and for
// 7z the header at its end (and the header's packed stream,
// LZMA-decoded, when the header is encoded). A read r fails ends it with
// r's error.
func Inspect(r io.ReaderAt, size int64) (Info, error) {
	for n := min(size, firstBytes); ; n = min(size, HeadBytes) {
		data, err := readAt(r, 0, n)
		if err != nil {
			return Info{}, err
		}
		info, err := inspect(r, size, data)
		if err != nil || info.Known || n == min(size, HeadBytes) {
			return info, err
		}
	}
}

// inspect reads the headers in data, the first bytes of r.
func inspect(r io.ReaderAt, size int64, data []byte) (Info, error) {
	switch {
	case bytes.HasPrefix(data, sigRAR5):
		return rar5(data[len(sigRAR5):])
	case bytes.HasPrefix(data, sigRAR4):
		return rar4(data[len(sigRAR4):])
	case bytes.HasPrefix(data, sig7z):
		return sevenZip(r, size, data)
	case bytes.HasPrefix(data, sigZIP):
		return zip(data)
	case bytes.HasPrefix(data, sigSpan) && bytes.HasPrefix(data[4:], sigZIP):
		return zip(data[4:])
	}
	return Info{}, ErrNotArchive
}

// readAt reads n bytes of r at off.
func readAt(r io.ReaderAt, off, n int64) ([]byte, error) {
	b := make([]byte, n)
	m, err := r.ReadAt(b, off)
	if m == len(b) {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("archive: reading %d bytes at %d: %w", n, off, err)
}

// inner is the password of an archive whose first file is name: an
// archive inside may be passworded.
func inner(name string) Password {
	switch strings.ToLower(path.Ext(name)) {
	case ".rar", ".zip", ".7z":
		return Potentially
	}
	return None
}

func corrupt(format Format, f string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, format, fmt.Sprintf(f, args...))
}

// rar4 walks RAR 4 blocks (after the signature) to the main header's
// flags and the first file header's.
func rar4(b []byte) (Info, error) {
	info := Info{Format: RAR4}
	for range MaxBlocks {
		if len(b) < 7 {
			return info, nil // the data ends first
		}
		typ := b[2]
		flags := binary.LittleEndian.Uint16(b[3:5])
		size := int(binary.LittleEndian.Uint16(b[5:7]))
		if size < 7 {
			return info, corrupt(RAR4, "a block of %d bytes", size)
		}
		if size > len(b) {
			return info, nil
		}
		if got := uint16(crc32.ChecksumIEEE(b[2:size])); got != binary.LittleEndian.Uint16(b[0:2]) && typ != 0x72 {
			return info, corrupt(RAR4, "block CRC %04x, it says %04x", got, binary.LittleEndian.Uint16(b[0:2]))
		}
		var data uint64
		switch typ {
		case 0x73: // main
			if flags&0x0080 != 0 { // the headers are encrypted
				info.Password, info.Known = Passworded, true
				return info, nil
			}
		case 0x74: // file
			if size < 32 {
				return info, corrupt(RAR4, "a file header of %d bytes", size)
			}
			nameLen := int(binary.LittleEndian.Uint16(b[26:28]))
			at := 32
			if flags&0x0100 != 0 { // 64-bit sizes
				at += 8
			}
			if at+nameLen > size {
				return info, corrupt(RAR4, "a name of %d bytes in a header of %d", nameLen, size)
			}
			info.FirstFile = string(b[at : at+nameLen])
			info.Known = true
			if flags&0x0004 != 0 {
				info.Password = Passworded
			} else {
				info.Password = inner(info.FirstFile)
			}
			return info, nil
		case 0x7b: // end of the archive
			info.Known = true
			return info, nil
		}
		if flags&0x8000 != 0 {
			if size < 11 {
				return info, corrupt(RAR4, "a block of %d bytes with data", size)
			}
			data = uint64(binary.LittleEndian.Uint32(b[7:11]))
		}
		if data > uint64(len(b)-size) {
			return info, nil // the next block is past the data
		}
		b = b[size+int(data):]
	}
	return info, corrupt(RAR4, "more than %d blocks", MaxBlocks)
}

// vint reads a RAR 5 variable-length integer.
func vint(b []byte) (uint64, []byte, bool) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, b[i+1:], true
		}
	}
	return 0, nil, false
}

// rar5 walks RAR 5 headers (after the signature) to an archive
// encryption header or the first file header.
func rar5(b []byte) (Info, error) {
	info := Info{Format: RAR5}
	for range MaxBlocks {
		if len(b) < 5 {
			return info, nil
		}
		sum := binary.LittleEndian.Uint32(b[0:4])
		size, rest, ok := vint(b[4:])
		if !ok {
			return info, nil // cut, or not a size: the data ends here either way
		}
		sizeLen := len(b) - 4 - len(rest)
		if size < 2 || size > 2<<20 {
			return info, corrupt(RAR5, "a header of %d bytes", size)
		}
		if size > uint64(len(rest)) {
			return info, nil
		}
		if got := crc32.ChecksumIEEE(b[4 : 4+sizeLen+int(size)]); got != sum {
			return info, corrupt(RAR5, "header CRC %08x, it says %08x", got, sum)
		}
		h := rest[:size]
		next := rest[size:]
		typ, h, ok1 := vint(h)
		flags, h, ok2 := vint(h)
		var extra, data uint64
		ok3, ok4 := true, true
		if flags&0x0001 != 0 {
			extra, h, ok3 = vint(h)
		}
		if flags&0x0002 != 0 {
			data, h, ok4 = vint(h)
		}
		if !ok1 || !ok2 || !ok3 || !ok4 || extra > uint64(len(h)) {
			return info, corrupt(RAR5, "a header's fields run past it")
		}
		switch typ {
		case 4: // archive encryption: every header after it is encrypted
			info.Password, info.Known = Passworded, true
			return info, nil
		case 2: // file
			name, err := rar5Name(h[:uint64(len(h))-extra])
			if err != nil {
				return info, err
			}
			info.FirstFile, info.Known = name, true
			info.Password = inner(name)
			if rar5Encrypted(h[uint64(len(h))-extra:]) {
				info.Password = Passworded
			}
			return info, nil
		case 5: // end of the archive
			info.Known = true
			return info, nil
		}
		if data > uint64(len(next)) {
			return info, nil
		}
		b = next[data:]
	}
	return info, corrupt(RAR5, "more than %d headers", MaxBlocks)
}

// rar5Name reads a file header's fields up to its name.
func rar5Name(h []byte) (string, error) {
	fileFlags, h, ok := vint(h)
	ok = ok && len(h) > 0
	for i := 0; ok && i < 2; i++ { // unpacked size, attributes
		_, h, ok = vint(h)
	}
	if ok && fileFlags&0x0002 != 0 { // mtime
		ok = len(h) >= 4
		if ok {
			h = h[4:]
		}
	}
	if ok && fileFlags&0x0004 != 0 { // data CRC32
		ok = len(h) >= 4
		if ok {
			h = h[4:]
		}
	}
	for i := 0; ok && i < 2; i++ { // compression, host OS
		_, h, ok = vint(h)
	}
	var n uint64
	if ok {
		n, h, ok = vint(h)
	}
	if !ok || n > uint64(len(h)) {
		return "", corrupt(RAR5, "a file header's fields run past it")
	}
	return string(h[:n]), nil
}

// rar5Encrypted reports whether a file header's extra area has a file
// encryption record.
func rar5Encrypted(extra []byte) bool {
	for range MaxBlocks {
		size, rest, ok := vint(extra)
		if !ok || size == 0 || size > uint64(len(rest)) {
			return false
		}
		typ, _, ok := vint(rest[:size])
		if ok && typ == 1 {
			return true
		}
		extra = rest[size:]
	}
	return false
}

// The 7z coder IDs Inspect knows: AES-256 with SHA-256 keys, and LZMA,
// which 7-Zip packs headers with.
var (
	coderAES  = []byte{0x06, 0xf1, 0x07, 0x01}
	coderLZMA = []byte{0x03, 0x01, 0x01}
)

// sevenZip reads a 7z archive's signature header (in head), then the
// header it points at, at the archive's end.
func sevenZip(r io.ReaderAt, size int64, head []byte) (Info, error) {
	info := Info{Format: SevenZip}
	if len(head) < 32 {
		return info, nil
	}
	if got := crc32.ChecksumIEEE(head[12:32]); got != binary.LittleEndian.Uint32(head[8:12]) {
		return info, corrupt(SevenZip, "start header CRC %08x, it says %08x", got, binary.LittleEndian.Uint32(head[8:12]))
	}
	off := binary.LittleEndian.Uint64(head[12:20])
	n := binary.LittleEndian.Uint64(head[20:28])
	if n == 0 || n > Max7zHeader || off > 1<<50 {
		return info, corrupt(SevenZip, "a header of %d bytes at %d", n, off)
	}
	if 32+off+n > uint64(size) {
		return info, nil // past this volume: a split archive's (.7z.001) is at the end of its last
	}
	h, err := readAt(r, int64(32+off), int64(n))
	if err != nil {
		return info, err
	}
	if got := crc32.ChecksumIEEE(h); got != binary.LittleEndian.Uint32(head[28:32]) {
		return info, corrupt(SevenZip, "header CRC %08x, it says %08x", got, binary.LittleEndian.Uint32(head[28:32]))
	}
	switch {
	case len(h) > 0 && h[0] == 0x01: // a plain header: its folders' coders
	case len(h) > 0 && h[0] == 0x17: // an encoded header
		if h, err = unpack7zHeader(r, size, h[1:]); err != nil {
			return info, err
		}
		if h == nil { // its own coders are AES: the headers are encrypted
			info.Password, info.Known = Passworded, true
			return info, nil
		}
	default:
		return info, corrupt(SevenZip, "a header that is neither plain nor encoded")
	}
	// A plain header lists every folder's coders; an AES one means the
	// files are encrypted. (The ID's bytes are looked for rather than the
	// header parsed whole: names are UTF-16, which cannot hold them by
	// chance in a way that matters more than a wrong attr.)
	info.Known = true
	if bytes.Contains(h, coderAES) {
		info.Password = Passworded
	}
	return info, nil
}

// sz7 reads the numbers and bytes of a 7z header.
type sz7 struct {
	b   []byte
	bad bool
}

func (z *sz7) byte() byte {
	if len(z.b) == 0 {
		z.bad = true
		return 0
	}
	c := z.b[0]
	z.b = z.b[1:]
	return c
}

// number reads a 7z NUMBER: the first byte's leading ones say how many
// bytes follow.
func (z *sz7) number() uint64 {
	first := z.byte()
	var v uint64
	mask := byte(0x80)
	for i := 0; i < 8; i++ {
		if first&mask == 0 {
			return v | uint64(first&(mask-1))<<(8*i)
		}
		v |= uint64(z.byte()) << (8 * i)
		mask >>= 1
	}
	return v
}

func (z *sz7) bytes(n uint64) []byte {
	if n > uint64(len(z.b)) {
		z.bad = true
		return nil
	}
	b := z.b[:n]
	z.b = z.b[n:]
	return b
}

// unpack7zHeader reads an encoded header's streams info (one packed
// stream, one folder) and returns the header it packs, LZMA-decoded; nil
// when the folder's coders are AES (encrypted headers).
func unpack7zHeader(r io.ReaderAt, size int64, b []byte) ([]byte, error) {
	z := &sz7{b: b}
	if z.byte() != 0x06 { // kPackInfo
		return nil, corrupt(SevenZip, "an encoded header without its pack info")
	}
	packPos := z.number()
	if z.number() != 1 || z.byte() != 0x09 { // one packed stream, kSize
		return nil, corrupt(SevenZip, "an encoded header of other than one packed stream")
	}
	packSize := z.number()
	for c := z.byte(); c != 0x00 && !z.bad; c = z.byte() { // to kEnd, past any CRCs
		if c == 0x0a {
			z.bytes(1 + 4)
		}
	}
	if z.byte() != 0x07 || z.byte() != 0x0b || z.number() != 1 || z.byte() != 0x00 { // kUnPackInfo, kFolder, 1, not external
		return nil, corrupt(SevenZip, "an encoded header of other than one folder")
	}
	coders := z.number()
	if coders == 0 || coders > 4 {
		return nil, corrupt(SevenZip, "an encoded header of %d coders", coders)
	}
	var lzmaProps []byte
	for range coders {
		flag := z.byte()
		id := z.bytes(uint64(flag & 0x0f))
		if flag&0x10 != 0 { // complex: numbers of in and out streams
			z.number()
			z.number()
		}
		var props []byte
		if flag&0x20 != 0 {
			props = z.bytes(z.number())
		}
		switch {
		case bytes.Equal(id, coderAES):
			return nil, nil
		case bytes.Equal(id, coderLZMA):
			lzmaProps = props
		}
	}
	if z.byte() != 0x0c { // kCodersUnPackSize
		return nil, corrupt(SevenZip, "an encoded header without its unpacked size")
	}
	unpacked := z.number()
	if z.bad {
		return nil, corrupt(SevenZip, "an encoded header cut short")
	}
	if len(lzmaProps) != 5 || coders != 1 {
		return nil, corrupt(SevenZip, "an encoded header packed other than by LZMA alone")
	}
	if packSize == 0 || packSize > Max7zHeader || unpacked == 0 || unpacked > Max7zHeader || 32+packPos+packSize > uint64(size) {
		return nil, corrupt(SevenZip, "a packed header of %d bytes (%d unpacked) at %d", packSize, unpacked, packPos)
	}
	packed, err := readAt(r, int64(32+packPos), int64(packSize))
	if err != nil {
		return nil, err
	}
	// The classic LZMA header: the coder's 5 property bytes, then the
	// unpacked size.
	hdr := binary.LittleEndian.AppendUint64(append([]byte(nil), lzmaProps...), unpacked)
	zr, err := lzma.NewReader(io.MultiReader(bytes.NewReader(hdr), bytes.NewReader(packed)))
	if err != nil {
		return nil, corrupt(SevenZip, "a packed header: %v", err)
	}
	h, err := io.ReadAll(io.LimitReader(zr, int64(unpacked)+1))
	if err != nil || uint64(len(h)) != unpacked {
		return nil, corrupt(SevenZip, "a packed header of %d bytes unpacks to %d: %v", unpacked, len(h), err)
	}
	if len(h) == 0 || h[0] != 0x01 {
		return nil, corrupt(SevenZip, "a packed header that is not a plain one")
	}
	return h, nil
}

// zip walks ZIP local file headers to the first file's.
func zip(b []byte) (Info, error) {
	info := Info{Format: ZIP}
	for range MaxBlocks {
		if len(b) < 30 {
			return info, nil
		}
		if !bytes.HasPrefix(b, sigZIP) {
			if bytes.HasPrefix(b, []byte("PK\x01\x02")) || bytes.HasPrefix(b, []byte("PK\x05\x06")) {
				info.Known = true // the central directory: no file entry
				return info, nil
			}
			return info, corrupt(ZIP, "no local file header where one should be")
		}
		flags := binary.LittleEndian.Uint16(b[6:8])
		method := binary.LittleEndian.Uint16(b[8:10])
		csize := uint64(binary.LittleEndian.Uint32(b[18:22]))
		nameLen := int(binary.LittleEndian.Uint16(b[26:28]))
		extraLen := int(binary.LittleEndian.Uint16(b[28:30]))
		if 30+nameLen > len(b) {
			return info, nil
		}
		name := string(b[30 : 30+nameLen])
		if flags&0x0001 != 0 || method == 99 {
			info.FirstFile, info.Password, info.Known = name, Passworded, true
			return info, nil
		}
		if !strings.HasSuffix(name, "/") {
			info.FirstFile, info.Known = name, true
			info.Password = inner(name)
			return info, nil
		}
		// A directory: the next entry, when its size is in the header.
		if flags&0x0008 != 0 || 30+uint64(nameLen+extraLen)+csize > uint64(len(b)) {
			return info, nil
		}
		b = b[30+nameLen+extraLen+int(csize):]
	}
	return info, corrupt(ZIP, "more than %d entries", MaxBlocks)
}
