package postproc

import (
	"cmp"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/archive"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/internal/backoff"
	"github.com/edgeindex/edgeindex/nfo"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/par2"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
	"github.com/edgeindex/edgeindex/yenc"
)

// Store is what a Processor needs of the database (sqlstore.Store).
type Store interface {
	// PostProcDue leases up to n releases due at now, until now+lease.
	PostProcDue(ctx context.Context, now time.Time, lease time.Duration, n int) ([]int64, error)
	// ReleaseDetails reads a release without its files' parts.
	ReleaseDetails(ctx context.Context, id int64, files int) (release.Release, error)
	// ReleaseFiles calls each with the release's files, with their parts.
	ReleaseFiles(ctx context.Context, id int64, each func(release.File) error) error
	// PostProcDone stores what was found, renaming the release when name
	// is not "".
	PostProcDone(ctx context.Context, id int64, name string, p release.PostProc) error
	// PostProcFailed counts a failed try, due again at next.
	PostProcFailed(ctx context.Context, id int64, reason string, next time.Time, maxAttempts int) error
}

// Bodies reads article bodies: sources.Router does, through the
// nntp.Source of the group's provider.
type Bodies interface {
	Body(ctx context.Context, group, messageID string) ([]byte, error)
}

// Config configures a Processor. Store and Bodies are required; the zero
// value of every other field means its default.
type Config struct {
	Store  Store
	Bodies Bodies
	// Batch is how many releases a pass leases at once. Default 16.
	Batch int
	// Concurrency bounds the releases processed at once. Default 2 (the
	// bodies themselves are bounded by the source's share).
	Concurrency int
	// Lease is how long a release taken stays out of others' passes.
	// Default 10 minutes.
	Lease time.Duration
	// MaxBodies bounds the bodies read for one release. Default 6: an
	// NFO, a PAR2 index, a first archive volume's first segment and up
	// to three of a 7z archive's header.
	MaxBodies int
	// MaxPart bounds a decoded yEnc part. Default 4 MiB.
	MaxPart int
	// Attempts is how many tries a release gets. Default 5.
	Attempts int
	// Backoff is the wait before the first retry; each doubles it, with
	// jitter, up to MaxBackoff. Defaults 1 minute and 1 hour.
	Backoff, MaxBackoff time.Duration
	// Idle is how long Run waits between passes that found nothing.
	// Default 5 seconds.
	Idle   time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Batch = cmp.Or(c.Batch, 16)
	c.Concurrency = cmp.Or(c.Concurrency, 2)
	c.Lease = cmp.Or(c.Lease, 10*time.Minute)
	c.MaxBodies = cmp.Or(c.MaxBodies, 6)
	c.MaxPart = cmp.Or(c.MaxPart, 4<<20)
	c.Attempts = cmp.Or(c.Attempts, 5)
	c.Backoff = cmp.Or(c.Backoff, time.Minute)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, time.Hour)
	c.Idle = cmp.Or(c.Idle, 5*time.Second)
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Processor post-processes releases; New makes one, Run runs it.
type Processor struct {
	cfg Config

	done, failed, bodies atomic.Int64
	busy                 atomic.Int64 // nanoseconds of passes that took releases
}

// New checks cfg and returns a Processor.
func New(cfg Config) (*Processor, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.Store == nil || cfg.Bodies == nil:
		return nil, edgeindex.Invalidf("postproc: Store and Bodies are required")
	case cfg.Batch < 1 || cfg.Concurrency < 1 || cfg.MaxBodies < 1 || cfg.Attempts < 1 || cfg.MaxPart < 1:
		return nil, edgeindex.Invalidf("postproc: Batch, Concurrency, MaxBodies, MaxPart and Attempts must be at least 1")
	}
	return &Processor{cfg: cfg}, nil
}

// Stats are a Processor's counts since it started.
type Stats struct {
	Done   int64 // releases post-processed
	Failed int64 // tries that failed
	Bodies int64 // article bodies read
	// Busy is the time spent in passes that took releases: Done / Busy
	// is the rate of post-processing, idle waits left out.
	Busy time.Duration
}

// Stats returns the counts so far.
func (p *Processor) Stats() Stats {
	return Stats{Done: p.done.Load(), Failed: p.failed.Load(), Bodies: p.bodies.Load(), Busy: time.Duration(p.busy.Load())}
}

// Run makes passes until ctx ends, one right after another while they
// find releases, Idle apart when they do not. A failed pass is logged.
func (p *Processor) Run(ctx context.Context) error {
	for {
		n, err := p.Pass(ctx)
		if err != nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("postproc: pass", "err", err)
		}
		if n > 0 && err == nil {
			continue
		}
		if err := clock.Sleep(ctx, p.cfg.Clock, p.cfg.Idle); err != nil {
			return err
		}
	}
}

// Pass leases up to Batch due releases and post-processes them; it
// returns how many it took.
func (p *Processor) Pass(ctx context.Context) (int, error) {
	start := time.Now()
	ids, err := p.cfg.Store.PostProcDue(ctx, p.cfg.Clock.Now(), p.cfg.Lease, p.cfg.Batch)
	if err != nil {
		return 0, fmt.Errorf("postproc: %w", err)
	}
	if len(ids) > 0 {
		defer func() { p.busy.Add(int64(time.Since(start))) }()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.cfg.Concurrency)
	for _, id := range ids {
		g.Go(func() error { return p.release(gctx, id) })
	}
	return len(ids), g.Wait()
}

// release post-processes one release and stores the outcome; only a
// store that fails ends the pass.
func (p *Processor) release(ctx context.Context, id int64) error {
	r, err := p.cfg.Store.ReleaseDetails(ctx, id, 0)
	switch {
	case errors.Is(err, release.ErrNotFound):
		return nil // removed meanwhile
	case err != nil:
		return err
	}
	name, found, err := p.process(ctx, r)
	p.bodies.Add(int64(found.Bodies))
	if err == nil {
		if err := p.cfg.Store.PostProcDone(ctx, id, name, found); err != nil {
			return err
		}
		p.done.Add(1)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err() // the lease runs out; another pass takes it
	}
	if errors.Is(err, release.ErrNotFound) {
		return nil // removed meanwhile
	}
	p.failed.Add(1)
	attempt := r.PostProc.Attempts + 1
	next := p.cfg.Clock.Now().Add(backoff.Wait(attempt, p.cfg.Backoff, p.cfg.MaxBackoff, rand.Float64()))
	p.cfg.Logger.Warn("postproc: release", "release", id, "attempt", attempt, "err", err)
	return p.cfg.Store.PostProcFailed(ctx, id, err.Error(), next, p.cfg.Attempts)
}

// job is one release being processed: the bodies it may still read.
type job struct {
	p      *Processor
	ctx    context.Context
	found  release.PostProc
	notes  []string
	groups []string
	// nfoTitle is the NFO's Title line; archiveMD516k the MD5 of the
	// first archive volume's first 16 KiB, which names the PAR2 file it
	// is.
	nfoTitle      string
	archiveMD516k *[16]byte
}

// body reads and decodes one segment of a file.
func (j *job) body(f *release.File, n int) (yenc.Part, error) {
	if j.found.Bodies >= j.p.cfg.MaxBodies {
		return yenc.Part{}, fmt.Errorf("%w: %s: more than %d bodies for the release", errBudget, f.Name, j.p.cfg.MaxBodies)
	}
	i, ok := slices.BinarySearchFunc(f.Parts, n, func(pt usenet.Part, n int) int { return pt.N - n })
	if !ok {
		return yenc.Part{}, fmt.Errorf("%w: %s: no segment %d", errMissing, f.Name, n)
	}
	group := f.Groups
	if len(group) == 0 {
		group = j.groups
	}
	if len(group) == 0 {
		return yenc.Part{}, fmt.Errorf("%w: %s: no group", errMissing, f.Name)
	}
	j.found.Bodies++
	b, err := j.p.cfg.Bodies.Body(j.ctx, group[0], f.Parts[i].MessageID)
	if err != nil {
		return yenc.Part{}, fmt.Errorf("%s segment %d: %w", f.Name, n, err)
	}
	part, err := yenc.Decode(b, j.p.cfg.MaxPart)
	if err != nil {
		return part, fmt.Errorf("%w: %s segment %d: %w", errCorruptPiece, f.Name, n, err)
	}
	return part, nil
}

var (
	// errBudget: the release's bodies are spent; what is left is left
	// out.
	errBudget = errors.New("the bodies of a release are spent")
	// errMissing: the file has no such segment.
	errMissing = errors.New("a segment is missing")
	// errCorruptPiece: a body does not decode; it is left out.
	errCorruptPiece = errors.New("a corrupt piece")
)

// leftOut says whether err only leaves a piece out (a corrupt one, one
// too large, past the budget, a segment missing) rather than failing the
// try.
func leftOut(err error) bool {
	return errors.Is(err, errBudget) || errors.Is(err, errMissing) || errors.Is(err, errCorruptPiece) ||
		errors.Is(err, par2.ErrCorrupt) || errors.Is(err, par2.ErrNotPAR2) || errors.Is(err, par2.ErrTooLarge) ||
		errors.Is(err, archive.ErrCorrupt) || errors.Is(err, archive.ErrNotArchive) || errors.Is(err, nfo.ErrTooLarge) ||
		errors.Is(err, nntp.ErrTooLarge) // an article past the body bound: no try makes it smaller
}

// process reads what release r needs, and returns its new name ("" to
// keep it) and what was found; an error fails the try.
func (p *Processor) process(ctx context.Context, r release.Release) (string, release.PostProc, error) {
	files, err := p.pick(ctx, r.ID)
	if err != nil {
		return "", release.PostProc{}, err
	}
	j := &job{p: p, ctx: ctx, groups: r.Groups}
	var realNames []par2.File
	steps := []struct {
		f   *release.File
		run func(*release.File) error
	}{
		{files.nfo, j.readNFO},
		{files.par2, func(f *release.File) error {
			var err error
			realNames, err = j.readPAR2(f)
			return err
		}},
		{files.archive, j.readArchive},
	}
	for _, s := range steps {
		if s.f == nil {
			continue
		}
		if err := s.run(s.f); err != nil {
			if !leftOut(err) {
				return "", j.found, err
			}
			j.notes = append(j.notes, err.Error())
		}
	}
	// Renamed before, it is read again because it gained files: its files
	// are named again, the new ones too.
	hashed := r.PostProc.Renamed || release.Categorize(r.Name, r.Groups) == release.CatHashed
	if hashed && len(realNames) > 0 {
		if err := j.matchNames(files, realNames); err != nil {
			if !leftOut(err) {
				return "", j.found, err
			}
			j.notes = append(j.notes, err.Error())
		}
	}
	j.found.Reason = strings.Join(j.notes, "; ")
	if !hashed {
		return "", j.found, nil
	}
	return j.name(files, realNames), j.found, nil
}

// matchNames gives the release's data files, largest first, the names
// of the PAR2 set's files whose first 16 KiB have the same MD5, reading
// each one's first segment while the release's bodies last (the first
// archive volume's is read already).
func (j *job) matchNames(files picked, real []par2.File) error {
	byHash := map[[16]byte]string{}
	for _, f := range real {
		byHash[f.MD516k] = baseName(f)
	}
	for i := range files.data {
		f := &files.data[i]
		sum := j.archiveMD516k
		if files.archive == nil || f.Key != files.archive.Key || sum == nil {
			first, err := j.body(f, 1)
			if errors.Is(err, errBudget) {
				return nil // the largest are named; the rest keep theirs
			}
			if err != nil {
				return err
			}
			sum = md516k(first)
		}
		if sum == nil {
			continue
		}
		if name, ok := byHash[*sum]; ok {
			if j.found.FileNames == nil {
				j.found.FileNames = map[string]string{}
			}
			j.found.FileNames[f.Key] = name
		}
	}
	return nil
}

// readNFO reads the NFO's one segment.
func (j *job) readNFO(f *release.File) error {
	part, err := j.body(f, 1)
	if err != nil {
		return err
	}
	text, err := nfo.Decode(part.Data)
	if err != nil {
		return err
	}
	fields := nfo.Read(text)
	j.found.HasNFO, j.found.NFO, j.found.IMDb, j.found.TVDB = true, text, fields.IMDb, fields.TVDB
	j.nfoTitle = fields.Title
	return nil
}

// readPAR2 reads the first segment of the PAR2 index.
func (j *job) readPAR2(f *release.File) ([]par2.File, error) {
	part, err := j.body(f, 1)
	if err != nil {
		return nil, err
	}
	set, err := par2.Parse(part.Data)
	if err != nil {
		return nil, err
	}
	return set.Files, nil
}

// readArchive reads the first volume's headers through its segments.
func (j *job) readArchive(f *release.File) error {
	first, err := j.body(f, 1)
	if err != nil {
		return err
	}
	r := &segments{j: j, f: f, first: first}
	info, err := archive.Inspect(r, first.Size)
	if err != nil {
		return err
	}
	j.found.Password = int(info.Password)
	j.archiveMD516k = md516k(first)
	return nil
}

// md516k is the MD5 of a file's first 16 KiB when its first segment
// holds them (or the whole file).
func md516k(first yenc.Part) *[16]byte {
	n := min(int64(16<<10), first.Size)
	if first.Begin != 1 || int64(len(first.Data)) < n {
		return nil
	}
	sum := md5.Sum(first.Data[:n])
	return &sum
}

// name is a hashed release's new name: the stem of the real name of its
// largest file that was matched to its PAR2 set, else of the set's
// largest file that is not parity, else the NFO's title; "" when none
// reads as a name.
func (j *job) name(files picked, real []par2.File) string {
	var best string
	for _, f := range files.data { // largest first
		if n, ok := j.found.FileNames[f.Key]; ok {
			best = n
			break
		}
	}
	if best == "" {
		var largest uint64
		for _, f := range real {
			if !strings.EqualFold(path.Ext(f.Name), ".par2") && (best == "" || f.Length > largest) {
				best, largest = baseName(f), f.Length
			}
		}
	}
	groups := j.groups
	for _, n := range []string{release.Stem(best), j.nfoTitle} {
		n = strings.TrimSpace(n)
		if n != "" && len(n) <= release.MaxNameBytes && release.Categorize(n, groups) != release.CatHashed {
			return n
		}
	}
	return ""
}

// baseName is a PAR2 file's name without its directories, of either
// system's separator.
func baseName(f par2.File) string { return path.Base(strings.ReplaceAll(f.Name, `\`, "/")) }
