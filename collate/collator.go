package collate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/usenet"
)

// ErrBadWindow means LoadWindow was given a state that is not one SaveWindow
// wrote.
var ErrBadWindow = errors.New("collate: bad window state")

// DefaultMaxBinaries is the window's bound when Config.MaxBinaries is 0.
const DefaultMaxBinaries = 100_000

// windowVersion is the version of SaveWindow's JSON.
const windowVersion = 1

// Config configures a Collator. The zero value means the defaults: a
// carried window of at most DefaultMaxBinaries binaries, no flush.
type Config struct {
	// FlushIncomplete flushes at the end of every range, ordered lanes'
	// too. A plain range (Chunk.Ordered false) is always flushed: at its
	// end (the chunk whose To is the range's End), the parts of incomplete
	// binaries read in it are emitted as incomplete items in that chunk's
	// batch and dropped from the window, so nothing read is lost; a
	// consumer joins the items of one key with Merge. An ordered lane's
	// window carries binaries that straddle ranges until they complete,
	// unless FlushIncomplete is set.
	FlushIncomplete bool
	// MaxBinaries bounds the window: when a chunk leaves more incomplete
	// binaries than this, the oldest (by the highest article number seen of
	// each) are evicted down to 90% of MaxBinaries and emitted as incomplete
	// items in that chunk's batch. LoadWindow keeps only the newest
	// MaxBinaries of a state and drops the others (Stats.Dropped counts
	// them). 0 means DefaultMaxBinaries.
	MaxBinaries int
}

// withDefaults returns c with every zero field that has a default set to it.
func (c Config) withDefaults() Config {
	if c.MaxBinaries == 0 {
		c.MaxBinaries = DefaultMaxBinaries
	}
	return c
}

// validate checks a Config that has its defaults.
func (c Config) validate() error {
	if c.MaxBinaries < 0 {
		return edgeindex.Invalidf("collate: max binaries %d is negative", c.MaxBinaries)
	}
	return nil
}

// Stats counts what a Collator did.
type Stats struct {
	Window    int   // incomplete binaries held now
	Lines     int64 // overview lines read in chunks' [From, To]
	Skipped   int64 // of those, lines whose subject is not a binary part
	Completed int64 // complete items emitted
	Flushed   int64 // incomplete items emitted at a range's end (FlushIncomplete)
	Evicted   int64 // incomplete items emitted because the window was full
	Dropped   int64 // binaries LoadWindow dropped beyond MaxBinaries
	// Replayed counts the chunks handed again to rebuild the window
	// (edge.Chunk.Replay); what they read and emitted is not counted above.
	Replayed int64
}

// windowPart is a part in the window: it remembers the range it was read in,
// for FlushIncomplete.
type windowPart struct {
	usenet.Part
	Range int64 `json:"range"`
}

// entry is one incomplete binary in the window.
type entry struct {
	bin   usenet.Binary // without Parts
	parts []windowPart  // ascending by N, one per N
	last  int64         // the highest article number of its parts
}

// cached is the output of the last chunk handled for one range.
type cached struct {
	rangeID, from, to int64
	out               edge.Output
}

// cacheSize is how many ranges' last outputs a Collator remembers.
const cacheSize = 16

// A Collator collates the binary posts of a group's overview lines into
// items, one per binary, keyed by Key. It implements edge.Handler and
// edge.Windowed. Its methods are safe for concurrent use; the chunks of one
// range (or lane) must come in article order.
//
// A chunk is handled atomically: when it does not inflate or parse, or ctx
// ends, the window is left as it was. When the chunk last handled for a
// range is handled again (same range ID, From and To: a retry of a batch
// that was not stored), the same output is returned and the window is not
// touched, so the binaries it completed are not lost.
type Collator struct {
	cfg Config

	mu     sync.Mutex
	window map[string]*entry // by windowKey
	cache  [cacheSize]cached
	next   int // the cache slot to write next
	stats  Stats
	key    []byte // scratch for windowKey
}

var (
	_ edge.Handler  = (*Collator)(nil)
	_ edge.Windowed = (*Collator)(nil)
)

// New returns a Collator with an empty window.
func New(cfg Config) (*Collator, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Collator{cfg: cfg, window: make(map[string]*entry)}, nil
}

// line is what HandleChunk keeps of one overview line of a binary part.
type line struct {
	sub                   usenet.Subject
	number, bytes         int64
	from, date, messageID string
	skip                  bool
}

// HandleChunk reads the chunk's lines in [From, To] (lines below From were
// handled by an earlier holder; lines above To belong to the next batch),
// adds each binary part to its binary, and returns an item for each binary
// that became complete, with all its parts, dropping it from the window;
// then the incomplete items of FlushIncomplete and of eviction (see Config).
// Headers counts the lines read in [From, To], and Missing lists the
// numbers of [From, To] that had no line, for the coordinator to fetch
// again. Items is never nil. An error
// wraps overview.ErrBadChunk when the chunk does not inflate or parse.
func (c *Collator) HandleChunk(ctx context.Context, ch edge.Chunk) (edge.Output, error) {
	if err := ctx.Err(); err != nil {
		return edge.Output{}, err
	}
	if ch.From > ch.To {
		return edge.Output{}, edgeindex.Invalidf("collate: chunk %d-%d: from is after to", ch.From, ch.To)
	}
	c.mu.Lock()
	if out, ok := c.cached(ch); ok {
		c.mu.Unlock()
		return out, nil
	}
	c.mu.Unlock()

	// Read and parse everything first, so a bad chunk changes nothing.
	lines, err := readLines(ctx, ch)
	if err != nil {
		return edge.Output{}, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if out, ok := c.cached(ch); ok { // handled meanwhile by another caller
		return out, nil
	}
	counted := c.stats // a replay changes the window as before, not the counters
	out := edge.Output{Items: []batch.Item{}, Headers: int64(len(lines)), Missing: missing(ch, lines)}
	c.stats.Lines += int64(len(lines))
	if out.Items, err = c.addLines(lines, ch.Range, out.Items); err != nil {
		return edge.Output{}, err
	}
	if (c.cfg.FlushIncomplete || !ch.Ordered) && ch.To == ch.Range.End {
		items, err := c.flush(ch.Range.ID)
		if err != nil {
			return edge.Output{}, err
		}
		out.Items = append(out.Items, items...)
	}
	items, err := c.evict()
	if err != nil {
		return edge.Output{}, err
	}
	out.Items = append(out.Items, items...)
	if ch.Replay {
		c.stats = counted
		c.stats.Replayed++
	}
	c.cache[c.next] = cached{rangeID: ch.Range.ID, from: ch.From, to: ch.To, out: out}
	c.next = (c.next + 1) % cacheSize
	return copyOutput(out), nil
}

// readLines reads the lines of ch in [From, To], parsing the subject of
// each; a line whose subject is not a binary part is kept, marked skip. An
// error wraps overview.ErrBadChunk when the chunk does not inflate or
// parse, or is ctx's.
func readLines(ctx context.Context, ch edge.Chunk) ([]line, error) {
	lines := make([]line, 0, min(ch.To-ch.From+1, 1<<14))
	err := overview.ReadChunk(ch.Data, func(o overview.Overview) error {
		if o.Number < ch.From || o.Number > ch.To {
			return nil
		}
		if len(lines)%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		sub, ok := usenet.ParseSubject(o.Subject)
		if !ok {
			lines = append(lines, line{number: o.Number, skip: true})
			return nil
		}
		// As JSON would have them, so that Key of a decoded item is its key.
		sub.Base, sub.Name = validUTF8(sub.Base), validUTF8(sub.Name)
		lines = append(lines, line{sub: sub, number: o.Number, bytes: o.Bytes,
			from: validUTF8(o.From), date: validUTF8(o.Date), messageID: validUTF8(o.MessageID)})
		return nil
	})
	if err != nil {
		if errors.Is(err, overview.ErrBadChunk) {
			return nil, fmt.Errorf("collate: range %d chunk %d-%d: %w", ch.Range.ID, ch.From, ch.To, err)
		}
		return nil, err
	}
	return lines, ctx.Err()
}

// missing lists the numbers of [ch.From, ch.To] that no line has.
func missing(ch edge.Chunk, lines []line) []int64 {
	present := make([]int64, len(lines))
	for i, l := range lines {
		present[i] = l.number
	}
	slices.Sort(present) // a server may send lines out of order
	return edge.MissingFrom(ch.From, ch.To, present)
}

// addLines adds the binary parts of lines to the window, read in range r,
// and appends to items an item for each binary that became complete. The
// caller holds c.mu.
func (c *Collator) addLines(lines []line, r lease.Range, items []batch.Item) ([]batch.Item, error) {
	for i := range lines {
		l := &lines[i]
		if l.skip {
			c.stats.Skipped++
			continue
		}
		if done := c.add(l, r); done != nil {
			item, err := done.item(true, done.parts)
			if err != nil {
				return nil, err
			}
			items = append(items, item)
			c.stats.Completed++
		}
	}
	return items, nil
}

// cached returns the output of ch when it is the last chunk handled for its range.
func (c *Collator) cached(ch edge.Chunk) (edge.Output, bool) {
	for i := range cacheSize {
		// Newest first, so an older output of the same range never answers.
		e := &c.cache[(c.next-1-i+2*cacheSize)%cacheSize]
		if e.out.Items == nil || e.rangeID != ch.Range.ID {
			continue
		}
		if e.from == ch.From && e.to == ch.To {
			return copyOutput(e.out), true
		}
		return edge.Output{}, false
	}
	return edge.Output{}, false
}

func copyOutput(o edge.Output) edge.Output {
	o.Items = slices.Clone(o.Items)
	o.Missing = slices.Clone(o.Missing)
	return o
}

// validUTF8 returns s with each byte that is not part of valid UTF-8
// replaced by U+FFFD, as encoding/json writes it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s) + 8)
	for _, r := range s { // range yields U+FFFD for each invalid byte
		sb.WriteRune(r)
	}
	return sb.String()
}

// windowKey is the window's map key of a binary: what Key hashes.
func (c *Collator) windowKey(poster, base string, total int) []byte {
	k := append(c.key[:0], poster...)
	k = append(k, 0)
	k = append(k, base...)
	k = append(k, 0)
	k = strconv.AppendInt(k, int64(total), 10)
	c.key = k
	return k
}

// add adds a part to its binary and returns the binary when that completed
// it, having dropped it from the window.
func (c *Collator) add(l *line, r lease.Range) *entry {
	k := c.windowKey(l.from, l.sub.Base, l.sub.Total)
	e := c.window[string(k)]
	if e == nil {
		// The newsgroup, without the provider a range's group names
		// (NEWSGROUP@PROVIDER): the same binary read from two providers is
		// one binary of one newsgroup, and the newsgroup is what an NZB
		// and a downloader need.
		newsgroup, _ := grouplease.SplitGroup(r.Group)
		e = &entry{bin: usenet.Binary{
			Subject: l.sub.Base, Name: l.sub.Name, Poster: l.from, Group: newsgroup,
			Date: l.date, Total: l.sub.Total,
		}}
		c.window[string(k)] = e
	}
	p := windowPart{Part: usenet.Part{N: l.sub.Part, Article: l.number, MessageID: l.messageID, Bytes: l.bytes}, Range: r.ID}
	if n := len(e.parts); n == 0 || e.parts[n-1].N < p.N {
		e.parts = append(e.parts, p)
	} else if i, found := slices.BinarySearchFunc(e.parts, p.N, func(x windowPart, n int) int { return x.N - n }); !found {
		e.parts = slices.Insert(e.parts, i, p)
	} else {
		return nil // a part number seen already: keep the first
	}
	e.last = max(e.last, p.Article)
	if len(e.parts) < e.bin.Total {
		return nil
	}
	delete(c.window, string(k))
	return e
}

// item returns the item of e with parts.
func (e *entry) item(complete bool, parts []windowPart) (batch.Item, error) {
	b := e.bin
	b.Complete = complete
	b.Parts = make([]usenet.Part, len(parts))
	for i, p := range parts {
		b.Parts[i] = p.Part
	}
	v, err := json.Marshal(&b)
	if err != nil {
		return batch.Item{}, fmt.Errorf("collate: encode binary: %w", err)
	}
	return batch.Item{Key: b.Key(), Value: v}, nil
}

// flush emits the parts read in range id of the window's binaries as
// incomplete items, ordered by their first article, and drops them.
func (c *Collator) flush(id int64) ([]batch.Item, error) {
	type flushed struct {
		e     *entry
		parts []windowPart
	}
	var fs []flushed
	for k, e := range c.window {
		var mine, rest []windowPart
		for _, p := range e.parts {
			if p.Range == id {
				mine = append(mine, p)
			} else {
				rest = append(rest, p)
			}
		}
		if len(mine) == 0 {
			continue
		}
		fs = append(fs, flushed{e, mine})
		if len(rest) == 0 {
			delete(c.window, k)
			continue
		}
		e.parts, e.last = rest, 0
		for _, p := range rest {
			e.last = max(e.last, p.Article)
		}
	}
	slices.SortFunc(fs, func(a, b flushed) int { return cmp.Compare(a.parts[0].Article, b.parts[0].Article) })
	items := make([]batch.Item, 0, len(fs))
	for _, f := range fs {
		item, err := f.e.item(false, f.parts)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	c.stats.Flushed += int64(len(items))
	return items, nil
}

// oldest returns the window's keys, oldest first: by the highest article
// seen, then by key.
func (c *Collator) oldest() []string {
	keys := make([]string, 0, len(c.window))
	for k := range c.window {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if r := cmp.Compare(c.window[a].last, c.window[b].last); r != 0 {
			return r
		}
		return cmp.Compare(a, b)
	})
	return keys
}

// evict emits the oldest binaries as incomplete items when the window holds
// more than MaxBinaries, down to 90% of it.
func (c *Collator) evict() ([]batch.Item, error) {
	if len(c.window) <= c.cfg.MaxBinaries {
		return nil, nil
	}
	keep := c.cfg.MaxBinaries - c.cfg.MaxBinaries/10
	keys := c.oldest()
	keys = keys[:len(keys)-keep]
	items := make([]batch.Item, 0, len(keys))
	for _, k := range keys {
		e := c.window[k]
		item, err := e.item(false, e.parts)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
		delete(c.window, k)
	}
	c.stats.Evicted += int64(len(items))
	return items, nil
}

// savedBinary is one binary of the window's JSON.
type savedBinary struct {
	usenet.Binary
	Parts []windowPart `json:"parts"`
}

// windowState is the JSON that SaveWindow writes.
type windowState struct {
	Version  int           `json:"version"`
	Binaries []savedBinary `json:"binaries"`
}

// SaveWindow returns the window, the incomplete binaries, as JSON:
//
//	{"version": 1, "binaries": [{"subject", "name", "poster", "group", "date",
//	  "total", "complete": false, "parts": [{"n", "article", "messageId", "bytes", "range"}]}]}
//
// oldest first. It holds at most MaxBinaries binaries.
func (c *Collator) SaveWindow() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := windowState{Version: windowVersion, Binaries: make([]savedBinary, 0, len(c.window))}
	for _, k := range c.oldest() {
		e := c.window[k]
		st.Binaries = append(st.Binaries, savedBinary{Binary: e.bin, Parts: e.parts})
	}
	b, err := json.Marshal(&st)
	if err != nil {
		return nil, fmt.Errorf("collate: encode window: %w", err)
	}
	return b, nil
}

// LoadWindow replaces the window with a state SaveWindow wrote; nil or empty
// means an empty window. It keeps the newest MaxBinaries binaries and drops
// the others. It also forgets the outputs kept for retries. An error wraps
// ErrBadWindow, and leaves the window as it was.
func (c *Collator) LoadWindow(state []byte) error {
	w := make(map[string]*entry)
	var st windowState
	if len(state) > 0 {
		if err := json.Unmarshal(state, &st); err != nil {
			return fmt.Errorf("%w: %w", ErrBadWindow, err)
		}
		if st.Version != windowVersion {
			return fmt.Errorf("%w: version %d, want %d", ErrBadWindow, st.Version, windowVersion)
		}
	}
	var kb []byte
	for i, s := range st.Binaries {
		if s.Poster == "" || s.Subject == "" || s.Total < 1 || s.Total > usenet.MaxTotal || len(s.Parts) == 0 || len(s.Parts) >= s.Total {
			return fmt.Errorf("%w: binary %d is not an incomplete binary", ErrBadWindow, i)
		}
		e := &entry{bin: s.Binary, parts: s.Parts}
		e.bin.Complete, e.bin.Parts = false, nil
		for j, p := range s.Parts {
			if p.N < 1 || p.N > s.Total || (j > 0 && p.N <= s.Parts[j-1].N) {
				return fmt.Errorf("%w: binary %d: part numbers not ascending in 1..%d", ErrBadWindow, i, s.Total)
			}
			e.last = max(e.last, p.Article)
		}
		kb = append(kb[:0], s.Poster...)
		kb = append(kb, 0)
		kb = append(kb, s.Subject...)
		kb = append(kb, 0)
		kb = strconv.AppendInt(kb, int64(s.Total), 10)
		if w[string(kb)] != nil {
			return fmt.Errorf("%w: binary %d appears twice", ErrBadWindow, i)
		}
		w[string(kb)] = e
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.window = w
	c.cache = [cacheSize]cached{}
	if over := len(w) - c.cfg.MaxBinaries; over > 0 {
		for _, k := range c.oldest()[:over] {
			delete(c.window, k)
		}
		c.stats.Dropped += int64(over)
	}
	return nil
}

// Stats returns what the Collator did so far.
func (c *Collator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Window = len(c.window)
	return s
}
