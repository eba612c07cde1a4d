package sources

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
)

// SyntheticConfig configures a Synthetic source. The zero value means the
// defaults.
type SyntheticConfig struct {
	// Low and High are the watermarks every group reports; 0 and 0 mean 1 and
	// 10,000,000.
	Low, High int64
	// Groups, when not empty, are the only groups the source carries; the
	// others get ErrNoSuchGroup. Empty means every valid group name.
	Groups []string
	// MaxSpan is the most articles one Fetch generates; 0 means 1,000,000.
	MaxSpan int64
}

// withDefaults returns c with every zero field that has a default set to it.
func (c SyntheticConfig) withDefaults() SyntheticConfig {
	if c.Low == 0 && c.High == 0 {
		c.Low, c.High = 1, 10_000_000
	}
	c.MaxSpan = cmp.Or(c.MaxSpan, 1_000_000)
	return c
}

// validate checks a SyntheticConfig that has its defaults.
func (c SyntheticConfig) validate() error {
	if c.Low < 0 || c.Low > c.High {
		return edgeindex.Invalidf("synthetic watermarks: want 0 <= low <= high, got %d..%d", c.Low, c.High)
	}
	if c.MaxSpan < 0 {
		return edgeindex.Invalidf("synthetic max span %d is negative", c.MaxSpan)
	}
	for _, g := range c.Groups {
		if err := checkSyntheticGroup(g); err != nil {
			return edgeindex.Invalidf("synthetic groups: %q: %s", g, err)
		}
	}
	return nil
}

// Synthetic is a deterministic ChunkSource that needs no network. For every
// article n of a span it writes exactly one overview line, and nothing else:
// field 1 is n and field 5 (Message-ID) is "<n@GROUP.synthetic>".
//
// The lines look like Usenet binary posts, so a worker can collate them:
// every block of 1000 consecutive articles (1..1000, 1001..2000, ...) is one
// release of one poster: RAR volumes then PAR2 files, each posted as consecutive
// yEnc parts, with subjects like
//
//	[01/27] - "Quiet.River.2019.1080p.WEB-DL.x264-SYN.part01.rar" yEnc (1/48)
//
// The file counter [f/F] runs over the release's files and the part counter
// (p/P) over a file's parts. From, Date, bytes and lines are plausible and
// fixed by the release; References is empty; one extra field is
// "Xref: synthetic GROUP:n". Everything is a pure function of (group, n), so
// any span can be generated on its own and overlapping spans agree.
//
// Fetch generates every article of the span whatever the watermarks say, as
// the wire contract's rule asks; Watermarks only reports them.
type Synthetic struct {
	cfg    SyntheticConfig
	groups map[string]bool
}

var _ ChunkSource = (*Synthetic)(nil)

// NewSynthetic returns a Synthetic source.
func NewSynthetic(cfg SyntheticConfig) (*Synthetic, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Synthetic{cfg: cfg}
	if len(cfg.Groups) > 0 {
		s.groups = make(map[string]bool, len(cfg.Groups))
		for _, g := range cfg.Groups {
			s.groups[g] = true
		}
	}
	return s, nil
}

func checkSyntheticGroup(g string) error {
	if g == "" {
		return fmt.Errorf("empty group name")
	}
	for i := 0; i < len(g); i++ {
		if c := g[i]; c <= ' ' || c == 0x7f || c == '<' || c == '>' {
			return fmt.Errorf("byte %#x at %d is not allowed in a group name", c, i)
		}
	}
	return nil
}

func (s *Synthetic) group(g string) error {
	if err := checkSyntheticGroup(g); err != nil {
		return fmt.Errorf("%w: %q: %w", ErrNoSuchGroup, g, err)
	}
	if s.groups != nil && !s.groups[g] {
		return fmt.Errorf("%w: %q", ErrNoSuchGroup, g)
	}
	return nil
}

// Watermarks returns the configured low and high for every carried group.
func (s *Synthetic) Watermarks(ctx context.Context, group string) (low, high int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	if err := s.group(group); err != nil {
		return 0, 0, err
	}
	return s.cfg.Low, s.cfg.High, nil
}

// Fetch returns the gzip (gzip.BestSpeed) of one line per article of span.
// The span must have 0 <= From <= To and at most MaxSpan articles.
func (s *Synthetic) Fetch(ctx context.Context, group string, span lease.Span) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.group(group); err != nil {
		return nil, err
	}
	if span.From < 0 || span.From > span.To {
		return nil, edgeindex.Invalidf("span %d-%d: want 0 <= from <= to", span.From, span.To)
	}
	if span.To-span.From >= s.cfg.MaxSpan {
		return nil, edgeindex.Invalidf("span %d-%d: more than %d articles", span.From, span.To, s.cfg.MaxSpan)
	}
	if err := Ready(ctx); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(int(span.Len())*48 + 64)
	zw := gzipPool.Get().(*gzip.Writer)
	defer gzipPool.Put(zw)
	zw.Reset(&out)
	g := newSynthGen(group)
	buf := make([]byte, 0, 64<<10)
	for n := span.From; ; n++ {
		buf = g.appendLine(buf, n)
		if len(buf) >= 60<<10 {
			if _, err := zw.Write(buf); err != nil {
				return nil, err
			}
			buf = buf[:0]
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if n == span.To {
			break
		}
	}
	if _, err := zw.Write(buf); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

var gzipPool = sync.Pool{New: func() any {
	zw, err := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	if err != nil {
		panic(err) // BestSpeed is a valid level
	}
	return zw
}}

// synthBlock is the number of consecutive articles of one release.
const synthBlock = 1000

// synthFile is one file of a release: its parts are consecutive articles.
type synthFile struct {
	start   int    // offset in the block of the first part
	parts   int    // number of parts
	subject []byte // `[01/27] - "name.part01.rar" yEnc (` ; the caller appends p/P)
	total   []byte // "/P)"
	date    []byte
	bytes   int64 // bytes of a full part
	last    int64 // bytes of the last part
}

type synthRelease struct {
	block uint64
	from  []byte
	files []synthFile
}

// synthGen generates the lines of one group, caching the current release.
type synthGen struct {
	group []byte
	seed  uint64
	rel   synthRelease
	file  int // index in rel.files of the last file used
	ok    bool
}

func newSynthGen(group string) *synthGen {
	h := fnv.New64a()
	h.Write([]byte(group))
	return &synthGen{group: []byte(group), seed: h.Sum64()}
}

// mix is splitmix64's finaliser: a cheap, well-spread hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

var (
	synthWords = []string{
		"Quiet", "River", "Northern", "Lights", "Silver", "Harbor", "Broken", "Signal", "Lost", "Empire",
		"Midnight", "Garden", "Iron", "Valley", "Paper", "Moon", "Hidden", "Frontier", "Glass", "Ocean",
		"Winter", "Station", "Crimson", "Desert", "Electric", "Forest", "Golden", "Archive", "Last", "Orbit",
	}
	synthTags    = []string{"1080p.WEB-DL.x264", "2160p.BluRay.x265", "720p.HDTV.x264", "FLAC", "MP3.320kbps", "iNTERNAL.1080p.BluRay.x264"}
	synthGroups  = []string{"SYN", "GRP", "NTb", "FLUX", "KOGi", "ROVERS"}
	synthPosters = []string{
		"Yenc PowerPost <powerpost@example.invalid>",
		"anon <anon@anon.invalid>",
		"Uploader <uploader@usenet.invalid>",
		"ngPost <ngpost@example.invalid>",
		"nzbget-poster <poster@nzb.invalid>",
		"Binary Bob <bob@binaries.invalid>",
		"JBinUp <jbinup@example.invalid>",
		"Newsposter <np@posting.invalid>",
	}
)

// release builds the layout of block b.
func (g *synthGen) release(b uint64) {
	h := mix(g.seed ^ mix(b))
	pick := func(list []string, shift uint) string { return list[(h>>shift)%uint64(len(list))] }
	name := pick(synthWords, 0) + "." + pick(synthWords, 8) + "." +
		strconv.Itoa(1990+int((h>>16)%35)) + "." + pick(synthTags, 24) + "-" + pick(synthGroups, 32)
	poster := pick(synthPosters, 40)
	perRar := 30 + int((h>>44)%31) // parts of one RAR volume
	vols := 3 + int((h>>50)%4)     // PAR2 volumes of 1, 2, 4, ... blocks
	partBytes := 500_000 + int64((h>>54)%300_000)

	parParts := 1 << vols // index file (1 part) + volumes 1+2+...+2^(vols-1)
	rarParts := synthBlock - parParts
	rars := (rarParts + perRar - 1) / perRar
	files := rars + 1 + vols
	// Releases are posted two minutes apart from a fixed base, cycling every
	// 5,000,000 blocks (19 years); a release's files follow every 40 seconds.
	posted := time.Unix(1_500_000_000, 0).UTC().Add(time.Duration(b%5_000_000) * 2 * time.Minute)

	rel := synthRelease{block: b, from: []byte(poster), files: make([]synthFile, 0, files)}
	width := len(strconv.Itoa(files))
	rarWidth := max(2, len(strconv.Itoa(rars)))
	add := func(fname string, parts int) {
		i := len(rel.files)
		start := 0
		if i > 0 {
			start = rel.files[i-1].start + rel.files[i-1].parts
		}
		subject := fmt.Appendf(nil, "[%0*d/%d] - %q yEnc (", width, i+1, files, fname)
		date := posted.Add(time.Duration(i)*40*time.Second).AppendFormat(nil, time.RFC1123Z)
		last := partBytes/3 + int64(mix(h^uint64(i))%uint64(partBytes/2))
		rel.files = append(rel.files, synthFile{
			start: start, parts: parts, subject: subject,
			total: fmt.Appendf(nil, "/%d)", parts), date: date,
			bytes: partBytes, last: last,
		})
	}
	for i := range rars {
		add(fmt.Sprintf("%s.part%0*d.rar", name, rarWidth, i+1), min(perRar, rarParts-i*perRar))
	}
	add(name+".par2", 1)
	for v, blocks := 0, 1; v < vols; v, blocks = v+1, blocks*2 {
		add(fmt.Sprintf("%s.vol%03d+%02d.par2", name, blocks-1, blocks), blocks)
	}
	g.rel, g.file, g.ok = rel, 0, true
}

// appendLine appends the overview line of article n to dst.
func (g *synthGen) appendLine(dst []byte, n int64) []byte {
	u := uint64(n - 1) // release k holds articles 1000k+1 .. 1000k+1000
	b, off := u/synthBlock, int(u%synthBlock)
	if !g.ok || g.rel.block != b {
		g.release(b)
	}
	fs := g.rel.files
	// Lines come in order, so the file is almost always the cached one or the next.
	i := g.file
	if off < fs[i].start {
		i = 0
	}
	for off >= fs[i].start+fs[i].parts {
		i++
	}
	g.file = i
	f := &fs[i]
	part := off - f.start + 1

	size := f.bytes + int64(mix(u)%2048)
	if part == f.parts {
		size = f.last
	}
	dst = strconv.AppendInt(dst, n, 10)
	dst = append(dst, '\t')
	dst = append(dst, f.subject...)
	dst = strconv.AppendInt(dst, int64(part), 10)
	dst = append(dst, f.total...)
	dst = append(dst, '\t')
	dst = append(dst, g.rel.from...)
	dst = append(dst, '\t')
	dst = append(dst, f.date...)
	dst = append(dst, "\t<"...)
	dst = strconv.AppendInt(dst, n, 10)
	dst = append(dst, '@')
	dst = append(dst, g.group...)
	dst = append(dst, ".synthetic>\t\t"...)
	dst = strconv.AppendInt(dst, size, 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, size/130+12, 10)
	dst = append(dst, "\tXref: synthetic "...)
	dst = append(dst, g.group...)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\n')
}

// syntheticLines is the uncompressed lines of span, for tests and benchmarks.
func syntheticLines(group string, span lease.Span) []byte {
	g := newSynthGen(group)
	var buf []byte
	for n := span.From; ; n++ {
		buf = g.appendLine(buf, n)
		if n == span.To {
			break
		}
	}
	return slices.Clip(buf)
}
