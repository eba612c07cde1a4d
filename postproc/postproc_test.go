package postproc_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/tooltest"
	"github.com/edgeindex/edgeindex/internal/yenctest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/postproc"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

const group = "alt.binaries.postproc"

// poster posts files as yEnc articles: it keeps each part's body for the
// NNTP server and makes the binaries the builder reads.
type poster struct {
	bodies map[string]string
	bins   []usenet.Binary
	n      int64
}

// post posts the file at path as name, in parts of partSize, under a
// subject that counts file of files.
func (p *poster) post(t *testing.T, path, name string, file, files, partSize int) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	parts := yenctest.Encode(name, data, partSize, 128)
	b := usenet.Binary{Subject: fmt.Sprintf(`[%d/%d] - "%s" yEnc`, file, files, name), Name: name,
		Poster: "poster <p@example.test>", Group: group, Date: time.Now().UTC().Format(time.RFC1123Z),
		Total: len(parts), Complete: true}
	for _, yp := range parts {
		p.n++
		id := fmt.Sprintf("<%d.%s@example.test>", p.n, strings.ReplaceAll(name, " ", "_"))
		p.bodies[id] = string(yp.Body)
		b.Parts = append(b.Parts, usenet.Part{N: yp.Number, Article: p.n, MessageID: id, Bytes: int64(len(yp.Body))})
	}
	p.bins = append(p.bins, b)
}

// build stores the posted binaries as a worker would and builds their
// releases.
func (p *poster) build(t *testing.T, s *sqlstore.Store) map[string]release.Release {
	t.Helper()
	ctx := t.Context()
	span := p.n + 10
	_, err := s.AddGroup(ctx, grouplease.Group{Name: group, RangeSize: span, ChunkSize: span})
	require.NoError(t, err)
	_, err = s.AddRanges(ctx, grouplease.NewRanges{Group: group, From: 1, To: span})
	require.NoError(t, err)
	l, err := s.Grant(ctx, "w", time.Minute)
	require.NoError(t, err)
	var items []batch.Item
	for _, b := range p.bins {
		v, err := json.Marshal(b)
		require.NoError(t, err)
		items = append(items, batch.Item{Key: b.Key(), Value: v})
	}
	_, err = s.Put(ctx, l.Range.ID, lease.Fence{Node: l.Node, Token: l.Token}, batch.Batch{From: 1, To: span, Items: items})
	require.NoError(t, err)
	builder, err := release.NewBuilder(release.Config{Store: s})
	require.NoError(t, err)
	for {
		_, err := builder.Pass(ctx)
		require.NoError(t, err)
		cur, err := s.ReleaseCursor(ctx, release.DefaultConsumer)
		require.NoError(t, err)
		if cur.Items >= int64(len(items)) {
			break
		}
	}
	page, err := s.Releases(ctx, release.Query{Limit: 100})
	require.NoError(t, err)
	out := map[string]release.Release{}
	for _, r := range page.Releases {
		out[r.Name] = r
	}
	return out
}

func write(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// world is the releases of TestPostProc, posted to the in-repo NNTP
// server and built into a SQLite store.
type world struct {
	store    *sqlstore.Store
	srv      *nntptest.Server
	releases map[string]release.Release
	router   *sources.Router
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	p := &poster{bodies: map[string]string{}}

	// An obfuscated release: a movie and a PAR2 set made over its real
	// name, posted under one random stem.
	real := "Ocean.Documentary.2024.1080p.WEB.x264-GRP.mkv"
	write(t, dir, real, tooltest.Incompressible(120_000, 7))
	tooltest.Run(t, dir, "par2", "par2", "create", "-q", "-s20000", "-r10", "-n1", "set.par2", real)
	const hash = "a3f9c2e71b8d4f6a0c5e9b2d7f1a8c4e"
	p.post(t, filepath.Join(dir, real), hash+".mkv", 1, 3, 50_000)
	p.post(t, filepath.Join(dir, "set.par2"), hash+".par2", 2, 3, 50_000)
	p.post(t, filepath.Join(dir, "set.vol0+1.par2"), hash+".vol0+1.par2", 3, 3, 50_000)

	// A release with an NFO in code page 437.
	nfoText := "\xc9\xcd\xcd\xbb\r\n\xba Title: Deep Sea Life \xba\r\nhttps://www.imdb.com/title/tt7654321/\r\n"
	write(t, dir, "show.nfo", []byte(nfoText))
	write(t, dir, "show.mkv", tooltest.Incompressible(30_000, 9))
	p.post(t, filepath.Join(dir, "show.nfo"), "Deep.Sea.Life.S01E01.720p.HDTV.x264-GRP.nfo", 1, 2, 50_000)
	p.post(t, filepath.Join(dir, "show.mkv"), "Deep.Sea.Life.S01E01.720p.HDTV.x264-GRP.mkv", 2, 2, 50_000)

	// Password-protected archives, and a plain one.
	write(t, dir, "movie.mkv", tooltest.Incompressible(150_000, 11))
	tooltest.Run(t, dir, "7z", "p7zip-full", "a", "-bd", "-psecret", "-mhe=on", "secret.7z", "movie.mkv")
	tooltest.Run(t, dir, "zip", "zip", "-q", "-P", "secret", "secret.zip", "movie.mkv")
	tooltest.Run(t, dir, "zip", "zip", "-q", "plain.zip", "movie.mkv")
	p.post(t, filepath.Join(dir, "secret.7z"), "Secret.Movie.2024.1080p.BluRay.x264-GRP.7z", 1, 1, 40_000)
	p.post(t, filepath.Join(dir, "secret.zip"), "Zipped.Movie.2023.720p.BluRay.x264-GRP.zip", 1, 1, 40_000)
	p.post(t, filepath.Join(dir, "plain.zip"), "Plain.Movie.2022.720p.BluRay.x264-GRP.zip", 1, 1, 40_000)

	return p.world(t, nntp.Config{})
}

// world serves what p posted from the in-repo NNTP server, read through
// an nntp.Source of cfg (its Addr set), and builds its releases into a
// new SQLite store.
func (p *poster) world(t *testing.T, cfg nntp.Config) *world {
	t.Helper()
	st, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "db"), sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	srv, err := nntptest.New(nntptest.Config{Bodies: p.bodies})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	cfg.Addr = srv.Addr()
	src, err := nntp.New(cfg)
	require.NoError(t, err)
	router, err := sources.NewRouter(map[string]sources.ChunkSource{"": src})
	require.NoError(t, err)
	t.Cleanup(func() { router.Close() })
	return &world{store: st, srv: srv, releases: p.build(t, st), router: router}
}

// pass runs one post-processing pass over the world, with the defaults.
func (w *world) pass(t *testing.T) *postproc.Processor {
	t.Helper()
	pp, err := postproc.New(postproc.Config{Store: w.store, Bodies: w.router})
	require.NoError(t, err)
	_, err = pp.Pass(t.Context())
	require.NoError(t, err)
	return pp
}

func (w *world) release(t *testing.T, id int64) release.Release {
	t.Helper()
	r, err := w.store.ReleaseByID(t.Context(), id)
	require.NoError(t, err)
	return r
}

func TestPostProc(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	require.Len(t, w.releases, 5, "%v", w.releases)
	hashed := w.releases["a3f9c2e71b8d4f6a0c5e9b2d7f1a8c4e"]
	require.Equal(t, release.CatHashed, hashed.Category)

	p, err := postproc.New(postproc.Config{Store: w.store, Bodies: w.router})
	require.NoError(t, err)
	n, err := p.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 5, n)

	r := w.release(t, hashed.ID)
	require.Equal(t, "Ocean.Documentary.2024.1080p.WEB.x264-GRP", r.Name, "named by its PAR2 set, under the same id")
	require.Equal(t, release.CatMovieHD, r.Category)
	require.True(t, r.PostProc.Renamed)
	require.Equal(t, release.PostDone, r.PostProc.State)
	require.Equal(t, 2, r.PostProc.Bodies, "the PAR2 index's one segment, the movie's first")
	var movie release.File
	for _, f := range r.Files {
		if strings.HasSuffix(f.Name, ".mkv") {
			movie = f
		}
	}
	require.Equal(t, "Ocean.Documentary.2024.1080p.WEB.x264-GRP.mkv", movie.RealName, "the movie, by its first 16 KiB")
	require.Equal(t, "a3f9c2e71b8d4f6a0c5e9b2d7f1a8c4e.mkv", movie.Name, "as posted")

	show := w.release(t, w.releases["Deep.Sea.Life.S01E01.720p.HDTV.x264-GRP"].ID)
	require.True(t, show.PostProc.HasNFO)
	require.Equal(t, "╔══╗\n║ Title: Deep Sea Life ║\nhttps://www.imdb.com/title/tt7654321/\n", show.PostProc.NFO)
	require.Equal(t, "tt7654321", show.PostProc.IMDb)
	require.Equal(t, "Deep.Sea.Life.S01E01.720p.HDTV.x264-GRP", show.Name, "a readable name is kept")

	for name, want := range map[string]int{
		"Secret.Movie.2024.1080p.BluRay.x264-GRP": 1,
		"Zipped.Movie.2023.720p.BluRay.x264-GRP":  1,
		"Plain.Movie.2022.720p.BluRay.x264-GRP":   0,
	} {
		r := w.release(t, w.releases[name].ID)
		require.Equal(t, release.PostDone, r.PostProc.State, name)
		require.Equal(t, want, r.PostProc.Password, name)
		require.Empty(t, r.PostProc.Reason, name)
	}
	secret := w.release(t, w.releases["Secret.Movie.2024.1080p.BluRay.x264-GRP"].ID)
	require.Greater(t, secret.PostProc.Bodies, 1, "a 7z archive's header is read at its end")

	st := p.Stats()
	require.Equal(t, int64(5), st.Done)
	require.Zero(t, st.Failed)
	n, err = p.Pass(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "nothing is due again")

	// Queued again (as the builder does when a release gains files), the
	// renamed release keeps its name and its files theirs.
	_, err = w.store.DB().ExecContext(t.Context(), "UPDATE releases SET pp_state = 0, pp_next_us = 0 WHERE id = ?", hashed.ID)
	require.NoError(t, err)
	n, err = p.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	again := w.release(t, hashed.ID)
	require.Equal(t, r.Name, again.Name)
	require.Equal(t, release.PostDone, again.PostProc.State)
	for i := range r.Files {
		require.Equal(t, r.Files[i].RealName, again.Files[i].RealName, r.Files[i].Name)
	}
}

var badCRC = regexp.MustCompile(`(pcrc32=)[0-9a-f]{8}`)

// A body the provider does not have fails the try, which is retried
// after its backoff and given up after Attempts; a body that does not
// decode is left out and said, the release done without it.
func TestPostProcFailures(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	show := w.releases["Deep.Sea.Life.S01E01.720p.HDTV.x264-GRP"]
	secret := w.releases["Secret.Movie.2024.1080p.BluRay.x264-GRP"]
	full := w.release(t, show.ID)
	nfoID := full.Files[1].Parts[0].MessageID // files by name: .mkv, then .nfo
	require.True(t, strings.HasSuffix(full.Files[1].Name, ".nfo"))
	sfull := w.release(t, secret.ID)
	w.srv.Update(func(c *nntptest.Config) {
		c.Bodies[nfoID] = badCRC.ReplaceAllString(c.Bodies[nfoID], "${1}00000000") // a CRC that cannot match
		delete(c.Bodies, sfull.Files[0].Parts[0].MessageID)
	})
	clk := clock.NewManual(time.Now())
	p, err := postproc.New(postproc.Config{Store: w.store, Bodies: w.router, Clock: clk, Attempts: 2})
	require.NoError(t, err)
	_, err = p.Pass(t.Context())
	require.NoError(t, err)

	r := w.release(t, show.ID)
	require.Equal(t, release.PostDone, r.PostProc.State)
	require.False(t, r.PostProc.HasNFO)
	require.Contains(t, r.PostProc.Reason, ".nfo segment 1")
	require.Contains(t, r.PostProc.Reason, "corrupt")

	r = w.release(t, secret.ID)
	require.Equal(t, release.PostPending, r.PostProc.State)
	require.Equal(t, 1, r.PostProc.Attempts)
	require.Contains(t, r.PostProc.Reason, "no such article")
	n, err := p.Pass(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "not due before its backoff")
	clk.Advance(3 * time.Minute)
	n, err = p.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r = w.release(t, secret.ID)
	require.Equal(t, release.PostFailed, r.PostProc.State, "given up at its second try")
	require.Equal(t, int64(2), p.Stats().Failed)
}

// rar4Loop is a RAR 4 archive of n empty comment blocks, each with its
// CRC right: a walk that never meets a file.
func rar4Loop(n int) []byte {
	b := []byte("Rar!\x1a\x07\x00")
	for range n {
		blk := []byte{0, 0, 0x75, 0, 0, 7, 0}
		binary.LittleEndian.PutUint16(blk, uint16(crc32.ChecksumIEEE(blk[2:])))
		b = append(b, blk...)
	}
	return b
}

// Hostile pieces, each left out with the error that says why, and
// nothing else changed: an NFO of 200 KB, a PAR2 packet that claims
// 4 GB, a RAR header loop.
func TestPostProcHostile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := &poster{bodies: map[string]string{}}
	const name = "Hostile.Release.2024.720p.WEB.x264-GRP"
	claim := make([]byte, 64)
	copy(claim, "PAR2\x00PKT")
	binary.LittleEndian.PutUint64(claim[8:], 4<<30)
	p.post(t, write(t, dir, "big.nfo", []byte(strings.Repeat("Title: a very long NFO\r\n", 200_000/24))), name+".nfo", 1, 3, 300_000)
	p.post(t, write(t, dir, "claim.par2", claim), name+".par2", 2, 3, 300_000)
	p.post(t, write(t, dir, "loop.rar", rar4Loop(300)), name+".part01.rar", 3, 3, 300_000)

	w := p.world(t, nntp.Config{})
	require.Len(t, w.releases, 1)
	before := w.releases[name]

	w.pass(t)
	r := w.release(t, before.ID)
	require.Equal(t, release.PostDone, r.PostProc.State)
	for _, want := range []string{"nfo: larger than the limit", "par2: packet larger than the limit", "archive: corrupt header"} {
		require.Contains(t, r.PostProc.Reason, want)
	}
	require.False(t, r.PostProc.HasNFO)
	require.Zero(t, r.PostProc.Password)
	require.Equal(t, 3, r.PostProc.Bodies)
	require.Equal(t, before.Name, r.Name)
	require.Equal(t, before.Category, r.Category)
	require.False(t, r.PostProc.Renamed)
}

// An article past the source's body bound is left out, not retried: no
// try makes it smaller.
func TestPostProcBodyTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := &poster{bodies: map[string]string{}}
	const name = "Large.Release.2024.720p.WEB.x264-GRP"
	p.post(t, write(t, dir, "big.nfo", tooltest.Incompressible(300_000, 5)), name+".nfo", 1, 2, 400_000)
	p.post(t, write(t, dir, "a.mkv", tooltest.Incompressible(1000, 6)), name+".mkv", 2, 2, 400_000)
	w := p.world(t, nntp.Config{MaxBodyBytes: 100 << 10})
	pp := w.pass(t)
	r := w.release(t, w.releases[name].ID)
	require.Equal(t, release.PostDone, r.PostProc.State)
	require.Contains(t, r.PostProc.Reason, "response too large")
	require.False(t, r.PostProc.HasNFO)
	require.Zero(t, pp.Stats().Failed)
}

// A provider that answers a 7z archive's last segment with a short part,
// in its right place of the right file, but ending before the header the
// archive points at: the archive is left out as corrupt (it was a slice
// past the part's end, a panic of the whole coordinator).
func TestPostProcShortSegment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "movie.mkv", tooltest.Incompressible(90_000, 3))
	tooltest.Run(t, dir, "7z", "p7zip-full", "a", "-bd", "-psecret", "-mhe=on", "short.7z", "movie.mkv")
	p := &poster{bodies: map[string]string{}}
	const name = "Short.Segment.2024.1080p.BluRay.x264-GRP"
	p.post(t, filepath.Join(dir, "short.7z"), name+".7z", 1, 1, 30_000)
	last := p.bins[0].Parts[len(p.bins[0].Parts)-1]
	size := len(read(t, filepath.Join(dir, "short.7z")))
	begin := (last.N-1)*30_000 + 1
	one := yenctest.Encode(name+".7z", []byte{0x42}, 1, 128)[0] // one byte, its place and size set below
	body := strings.Replace(string(one.Body), "size=1", fmt.Sprintf("size=%d", size), 1)
	body = strings.Replace(body, "part=1 total=1", fmt.Sprintf("part=%d total=%d", last.N, last.N), 1)
	body = strings.Replace(body, "begin=1 end=1", fmt.Sprintf("begin=%d end=%d", begin, begin), 1)
	body = strings.Replace(body, " part=1 pcrc32", fmt.Sprintf(" part=%d pcrc32", last.N), 1)
	p.bodies[last.MessageID] = body
	w := p.world(t, nntp.Config{})
	w.pass(t)
	r := w.release(t, w.releases[name].ID)
	require.Equal(t, release.PostDone, r.PostProc.State)
	require.Contains(t, r.PostProc.Reason, "ends at")
	require.Zero(t, r.PostProc.Password)
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
