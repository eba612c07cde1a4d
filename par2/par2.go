package par2

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Errors of Parse.
var (
	// ErrNotPAR2 means the data holds no PAR2 packet.
	ErrNotPAR2 = errors.New("par2: no PAR2 packet")
	// ErrCorrupt means the data has PAR2 packets but none of them holds
	// together: a bad length, or an MD5 that does not match.
	ErrCorrupt = errors.New("par2: corrupt")
	// ErrTooLarge means a packet claims more than MaxPacket bytes.
	ErrTooLarge = errors.New("par2: packet larger than the limit")
)

// MaxPacket bounds the length a packet may claim: far past a main or
// file description packet, which are what Parse reads; a recovery slice
// past it is skipped unread.
const MaxPacket = 1 << 20

// MaxName bounds a file's name, in bytes.
const MaxName = 1024

// MaxFiles bounds the files a main packet may list.
const MaxFiles = 1 << 14

const headerLen = 64

var (
	magic        = []byte("PAR2\x00PKT")
	typeMain     = []byte("PAR 2.0\x00Main\x00\x00\x00\x00")
	typeFileDesc = []byte("PAR 2.0\x00FileDesc")
)

// File is a file of a recovery set, as its description packet gives it.
type File struct {
	ID      [16]byte
	MD5     [16]byte // of the whole file
	MD516k  [16]byte // of its first 16 KiB (the whole file when shorter)
	Length  uint64
	Name    string // as the poster's tool wrote it, made valid UTF-8
	InOrder bool   // the main packet lists it
}

// Set is what Parse found of a recovery set.
type Set struct {
	ID        [16]byte
	SliceSize uint64 // 0 when no main packet was read
	// Files are the files described, in the main packet's order when it
	// was read, then any others in the order of their packets.
	Files []File
	// Refused counts the packets left out: a bad MD5 or length, or too
	// large.
	Refused int
}

// Parse reads the main and file description packets in data, of the
// recovery set of the first valid packet. Packets of other types are
// skipped by their length; a packet cut by the data's end is left out.
// It fails when no packet of a set could be read: ErrNotPAR2 when data
// holds no PAR2 magic, ErrTooLarge when the first packet claims more than
// MaxPacket, ErrCorrupt otherwise.
func Parse(data []byte) (Set, error) {
	var s Set
	var order [][16]byte
	descs := map[[16]byte]File{}
	var descOrder [][16]byte
	haveSet, sawMagic := false, false
	var firstErr error
	for {
		i := bytes.Index(data, magic)
		if i < 0 {
			break
		}
		sawMagic = true
		data = data[i:]
		if len(data) < headerLen {
			break // cut
		}
		n := binary.LittleEndian.Uint64(data[8:16])
		switch {
		case n > MaxPacket:
			// Past the bound: a recovery slice, or a lie. Skipped unread
			// when the data holds it; the end of what can be read if not.
			s.Refused++
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: a packet claims %d bytes, the limit is %d", ErrTooLarge, n, MaxPacket)
			}
			if n > uint64(len(data)) {
				data = data[len(magic):] // look for the next packet
				continue
			}
			data = data[n:]
			continue
		case n < headerLen || n%4 != 0:
			s.Refused++
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: a packet of %d bytes", ErrCorrupt, n)
			}
			data = data[len(magic):]
			continue
		case n > uint64(len(data)):
			// Cut by the data's end, or a length that lies: what follows
			// its magic may still hold packets.
			data = data[len(magic):]
			continue
		}
		pkt := data[:n]
		data = data[n:]
		if sum := md5.Sum(pkt[32:]); !bytes.Equal(sum[:], pkt[16:32]) {
			s.Refused++
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: a packet's MD5 does not match", ErrCorrupt)
			}
			continue
		}
		var set [16]byte
		copy(set[:], pkt[32:48])
		if !haveSet {
			s.ID, haveSet = set, true
		} else if set != s.ID {
			continue // another set's
		}
		typ, body := pkt[48:64], pkt[64:]
		switch {
		case bytes.Equal(typ, typeMain) && s.SliceSize == 0:
			ids, size, err := parseMain(body)
			if err != nil {
				s.Refused++
				continue
			}
			order, s.SliceSize = ids, size
		case bytes.Equal(typ, typeFileDesc):
			f, err := parseFileDesc(body)
			if err != nil {
				s.Refused++
				continue
			}
			if _, dup := descs[f.ID]; !dup {
				descs[f.ID] = f
				descOrder = append(descOrder, f.ID)
			}
		}
	}
	if !haveSet {
		switch {
		case firstErr != nil:
			return s, firstErr
		case sawMagic:
			return s, fmt.Errorf("%w: no whole packet", ErrCorrupt)
		}
		return s, ErrNotPAR2
	}
	for _, id := range order {
		if f, ok := descs[id]; ok {
			f.InOrder = true
			s.Files = append(s.Files, f)
			delete(descs, id)
		}
	}
	for _, id := range descOrder {
		if f, ok := descs[id]; ok {
			s.Files = append(s.Files, f)
		}
	}
	return s, nil
}

// parseMain reads a main packet's body: the slice size and the IDs of
// the recovery set's files.
func parseMain(b []byte) ([][16]byte, uint64, error) {
	if len(b) < 12 {
		return nil, 0, ErrCorrupt
	}
	size := binary.LittleEndian.Uint64(b[0:8])
	count := binary.LittleEndian.Uint32(b[8:12])
	b = b[12:]
	if size == 0 || size%4 != 0 || count > MaxFiles || uint64(count)*16 > uint64(len(b)) {
		return nil, 0, ErrCorrupt
	}
	ids := make([][16]byte, count)
	for i := range ids {
		copy(ids[i][:], b[i*16:])
	}
	return ids, size, nil
}

// parseFileDesc reads a file description packet's body.
func parseFileDesc(b []byte) (File, error) {
	var f File
	if len(b) < 56 {
		return f, ErrCorrupt
	}
	copy(f.ID[:], b[0:16])
	copy(f.MD5[:], b[16:32])
	copy(f.MD516k[:], b[32:48])
	f.Length = binary.LittleEndian.Uint64(b[48:56])
	name := bytes.TrimRight(b[56:], "\x00")
	if len(name) == 0 || len(name) > MaxName {
		return f, ErrCorrupt
	}
	f.Name = strings.ToValidUTF8(string(name), "\uFFFD")
	return f, nil
}
