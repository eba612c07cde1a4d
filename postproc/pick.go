package postproc

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/yenc"
)

// picked are the files of a release post-processing reads: each nil when
// the release has none.
type picked struct {
	nfo, par2, archive *release.File
	// data are the other files, largest first, each with its first
	// part only: what a PAR2 set's names may be matched to.
	data []release.File
}

var (
	// A PAR2 volume (name.vol00+01.par2) holds recovery data: the index
	// is the .par2 without it.
	parVolume = regexp.MustCompile(`(?i)\.vol\d+[+-]\d+\.par2$`)
	// An archive's first volume: .part01.rar (any number of zeros),
	// .rar that is not a later part, .7z or .7z.001, .zip or .zip.001.
	firstRAR    = regexp.MustCompile(`(?i)\.part0*1\.rar$`)
	laterRAR    = regexp.MustCompile(`(?i)\.part0*([2-9]|[1-9]\d+)\.rar$`)
	firstOther  = regexp.MustCompile(`(?i)\.(7z|zip)(\.0*1)?$`)
	otherVolume = regexp.MustCompile(`(?i)\.(7z|zip)\.\d+$`)
)

// pick reads release id's files and keeps the ones to read: the smallest
// NFO, the smallest PAR2 index, and the first volume of the first archive
// by name (a .part01.rar over a plain .rar). It holds their parts only.
func (p *Processor) pick(ctx context.Context, id int64) (picked, error) {
	var out picked
	rank := 99
	keep := func(dst **release.File, f release.File) {
		if *dst == nil || f.Bytes < (*dst).Bytes {
			c := f
			*dst = &c
		}
	}
	err := p.cfg.Store.ReleaseFiles(ctx, id, func(f release.File) error {
		name := strings.ToLower(f.Name)
		switch {
		case len(f.Parts) == 0:
		case strings.HasSuffix(name, ".nfo"):
			keep(&out.nfo, f)
		case strings.HasSuffix(name, ".par2") && !parVolume.MatchString(name):
			keep(&out.par2, f)
		default:
			r := archiveRank(name)
			if r < rank { // files come by name: the first of the best rank
				rank = r
				c := f
				out.archive = &c
			}
			if !strings.HasSuffix(name, ".par2") {
				first := f
				first.Parts = f.Parts[:1:1]
				out.data = append(out.data, first)
			}
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("postproc: release %d: files: %w", id, err)
	}
	slices.SortStableFunc(out.data, func(a, b release.File) int { return cmp.Compare(b.Bytes, a.Bytes) })
	return out, nil
}

// archiveRank ranks a file name as an archive's first volume: 0 a
// .part01.rar, 1 a plain .rar, 2 a .7z or .zip (or its .001); 99 not one.
func archiveRank(name string) int {
	switch {
	case firstRAR.MatchString(name):
		return 0
	case strings.HasSuffix(name, ".rar") && !laterRAR.MatchString(name):
		return 1
	case firstOther.MatchString(name) && (!otherVolume.MatchString(name) || strings.HasSuffix(name, "1")):
		return 2
	}
	return 99
}

// segments reads an archive through the segments of its file: each
// ReadAt decodes the segments its bytes are in (the first is read
// already), counted against the release's bodies. Segments are taken to
// be of the first one's size, as posting tools cut them, and each is
// checked to begin where that puts it.
type segments struct {
	j     *job
	f     *release.File
	first yenc.Part
	read  map[int]yenc.Part
}

func (s *segments) ReadAt(b []byte, off int64) (int, error) {
	size := s.first.End - s.first.Begin + 1
	if off < 0 || size <= 0 {
		return 0, fmt.Errorf("%w: read at %d", errCorruptPiece, off)
	}
	n := 0
	for n < len(b) {
		at := off + int64(n)
		if at >= s.first.Size {
			return n, io.EOF
		}
		k := int(at / size) // 0-based segment
		part, err := s.segment(k, size)
		if err != nil {
			return n, err
		}
		i := at - (part.Begin - 1)
		if i >= int64(len(part.Data)) {
			// The segment ends before the bytes its place promised.
			return n, fmt.Errorf("%w: %s: segment %d ends at %d, before byte %d", errCorruptPiece, s.f.Name, k+1, part.End, at+1)
		}
		n += copy(b[n:], part.Data[i:])
	}
	return n, nil
}

func (s *segments) segment(k int, size int64) (yenc.Part, error) {
	if k == 0 {
		return s.first, nil
	}
	if part, ok := s.read[k]; ok {
		return part, nil
	}
	part, err := s.j.body(s.f, k+1)
	if err != nil {
		return part, err
	}
	if part.Begin != int64(k)*size+1 || part.Size != s.first.Size {
		return part, fmt.Errorf("%w: %s segment %d begins at %d of %d, not %d of %d", errCorruptPiece, s.f.Name, k+1,
			part.Begin, part.Size, int64(k)*size+1, s.first.Size)
	}
	if s.read == nil {
		s.read = map[int]yenc.Part{}
	}
	s.read[k] = part
	return part, nil
}
