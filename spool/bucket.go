package spool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/internal/chunkfile"
	"github.com/edgeindex/edgeindex/lease"
)

// DefaultRefresh is how often a Bucket lists its store when
// BucketConfig.Refresh is 0.
const DefaultRefresh = 5 * time.Second

// DefaultTimeout bounds one call of a Bucket to its store when
// BucketConfig.Timeout is 0.
const DefaultTimeout = time.Minute

// BucketConfig configures a Bucket spool. The zero value means the
// defaults.
type BucketConfig struct {
	// MaxBytes bounds the total size of the chunks in the store, stored by
	// every coordinator that shares it; 0 means DefaultMaxBytes. Every
	// coordinator on one store must be given the same bound.
	MaxBytes int64
	// Refresh is how often the store is listed, to learn the chunks other
	// coordinators stored and dropped (and their sizes), and how often a
	// WaitChunk asks the store for its chunk; 0 means DefaultRefresh.
	Refresh time.Duration
	// Timeout bounds each call to the store (for Open, until the first
	// byte); 0 means DefaultTimeout.
	Timeout time.Duration
	// Logger gets the refreshes that failed; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with every zero field that has a default set to it.
func (c BucketConfig) withDefaults() BucketConfig {
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.Refresh == 0 {
		c.Refresh = DefaultRefresh
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// validate checks a BucketConfig that has its defaults.
func (c BucketConfig) validate() error {
	if c.MaxBytes < 0 {
		return edgeindex.Invalidf("spool max bytes %d is negative", c.MaxBytes)
	}
	if c.Refresh < 0 || c.Timeout < 0 {
		return edgeindex.Invalidf("spool refresh %s and timeout %s: want positive durations", c.Refresh, c.Timeout)
	}
	return nil
}

// Bucket is the spool in a blobstore.Store that several coordinators may
// share: an S3 bucket, usually (blobstore.Sub of the coordinators' store
// at "spool"). Each chunk is one blob, <rangeID>/<from>-<to>.gz, written
// with one atomic Put. It is safe for concurrent use.
//
// The bucket is the only truth; a Bucket keeps an index of it (chunk and
// size) to answer Has, Size and WaitRoom without a request. The index is
// the listing of the whole store, taken at Open and every Refresh since,
// with this process's own Puts and Drops applied at once (also to a
// listing taken while they ran). So the size bound holds across
// coordinators within one Refresh: a coordinator sees the chunks the
// others stored at most Refresh late, and together they may overshoot
// MaxBytes by what the others store in one Refresh (WaitRoom reserves
// nothing on one machine either). Listing costs one request per 1000
// chunks every Refresh. Chunks another coordinator stored or dropped are
// seen by Open and Read at once, by Has and Size after a Refresh;
// WaitChunk asks the store for its chunk every Refresh, and Learn, when
// another coordinator says it stored a chunk, wakes the waiters at once.
//
// Drop lists the range's blobs in the store and deletes them, so it drops
// the chunks other coordinators stored too. A Put that overlaps a Drop of
// its range in this process is ordered before the Drop; one that overlaps
// a Drop on another coordinator may outlive it (the store has no
// transactions), and is counted until the range is dropped again.
type Bucket struct {
	store blobstore.Store
	cfg   BucketConfig

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the refresher has ended

	refreshMu sync.Mutex // one listing at a time

	index        // the chunks of the listing, with this process's changes since
	listing bool // a listing is running: journal the changes (under mu)
	journal []change
	locks   map[int64]*rangeLock
}

// change is a change of the index made while a listing ran.
type change struct {
	id   int64
	span lease.Span
	size int64 // -1: the chunk was dropped
}

// rangeLock orders a range's Puts and DropChunks (read-locked, with a
// lock per chunk) before or after its Drops (write-locked).
type rangeLock struct {
	rw     sync.RWMutex
	chunks map[lease.Span]*chunkLock
	users  int
}

type chunkLock struct {
	mu    sync.Mutex
	users int
}

var _ Store = (*Bucket)(nil)

// OpenBucket opens the spool in store: it lists the store to count the
// chunks there, and starts listing it again every Refresh until Close.
// Blobs whose keys are not the spool's are left alone and not counted.
func OpenBucket(ctx context.Context, store blobstore.Store, cfg BucketConfig) (*Bucket, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, edgeindex.Invalidf("spool: the store is nil")
	}
	bctx, cancel := context.WithCancel(context.Background())
	b := &Bucket{
		store:  store,
		cfg:    cfg,
		ctx:    bctx,
		cancel: cancel,
		done:   make(chan struct{}),
		index:  newIndex(cfg.MaxBytes),
		locks:  make(map[int64]*rangeLock),
	}
	if err := b.Refresh(ctx); err != nil {
		cancel()
		return nil, err
	}
	go b.refresher()
	return b, nil
}

// BucketKey is the key of the chunk of (rangeID, span) in a Bucket's store:
// "<rangeID>/<from>-<to>.gz".
func BucketKey(rangeID int64, span lease.Span) string {
	return strconv.FormatInt(rangeID, 10) + "/" + chunkfile.Name(span)
}

// parseBucketKey reads a key BucketKey made.
func parseBucketKey(key string) (int64, lease.Span, bool) {
	a, name, ok := strings.Cut(key, "/")
	if !ok {
		return 0, lease.Span{}, false
	}
	id, err := strconv.ParseInt(a, 10, 64)
	if err != nil || strconv.FormatInt(id, 10) != a {
		return 0, lease.Span{}, false
	}
	span, ok := chunkfile.ParseName(name)
	return id, span, ok
}

func (b *Bucket) refresher() {
	defer close(b.done)
	t := time.NewTicker(b.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		if err := b.Refresh(b.ctx); err != nil && b.ctx.Err() == nil {
			b.cfg.Logger.Warn("spool: list the bucket", "err", err)
		}
	}
}

// Refresh lists the store now and makes the listing the index, with the
// changes this process made meanwhile applied to it. It wakes WaitChunk
// and Notify for every chunk it finds new, and WaitRoom when the size
// fell. The refresher calls it every Refresh.
func (b *Bucket) Refresh(ctx context.Context) error {
	b.refreshMu.Lock()
	defer b.refreshMu.Unlock()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	b.listing, b.journal = true, nil
	b.mu.Unlock()

	fresh, err := b.list(ctx)

	b.mu.Lock()
	defer b.mu.Unlock()
	journal := b.journal
	b.listing, b.journal = false, nil
	if err != nil {
		return fmt.Errorf("spool: list the bucket: %w", err)
	}
	if b.closed {
		return ErrClosed
	}
	for _, c := range journal {
		setSize(fresh, c.id, c.span, c.size)
	}
	b.adopt(fresh)
	return nil
}

// list lists the chunks in the store: their sizes by range and span.
func (b *Bucket) list(ctx context.Context) (map[int64]map[lease.Span]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	fresh := make(map[int64]map[lease.Span]int64)
	err := b.store.List(ctx, "", func(info blobstore.Info) error {
		id, span, ok := parseBucketKey(info.Key)
		if !ok {
			return nil
		}
		m := fresh[id]
		if m == nil {
			m = make(map[lease.Span]int64)
			fresh[id] = m
		}
		m[span] = info.Size
		return nil
	})
	return fresh, err
}

// adopt makes fresh the index. It wakes WaitChunk and Notify when a chunk
// appeared in it, and WaitRoom when the size fell. The caller holds b.mu.
func (b *Bucket) adopt(fresh map[int64]map[lease.Span]int64) {
	var size int64
	appeared := false
	for id, m := range fresh {
		for span, n := range m {
			size += n
			if _, ok := b.chunks[id][span]; !ok {
				appeared = true
			}
		}
	}
	b.chunks = fresh
	if size < b.size {
		b.wakeRoom()
	}
	b.size = size
	if appeared {
		b.wakeArrived()
	}
}

// setSize records a chunk's size in m, or forgets it when size is -1; it
// returns the change in total size.
func setSize(m map[int64]map[lease.Span]int64, id int64, span lease.Span, size int64) int64 {
	old, had := m[id][span]
	if size < 0 {
		if had {
			delete(m[id], span)
			if len(m[id]) == 0 {
				delete(m, id)
			}
		}
		return -old
	}
	if m[id] == nil {
		m[id] = make(map[lease.Span]int64)
	}
	m[id][span] = size
	return size - old
}

// record applies a change to the index, journals it while a listing
// runs, and wakes whom it concerns. The caller holds b.mu.
func (b *Bucket) record(id int64, span lease.Span, size int64) {
	_, had := b.chunks[id][span]
	delta := setSize(b.chunks, id, span, size)
	b.size += delta
	if b.listing {
		b.journal = append(b.journal, change{id, span, size})
	}
	if delta < 0 {
		b.wakeRoom()
	}
	if size >= 0 && !had {
		b.wakeArrived()
	}
}

// lockRange takes the range's lock, for writing when write is set. The
// returned func releases it.
func (b *Bucket) lockRange(id int64, write bool) (*rangeLock, func()) {
	b.mu.Lock()
	l := b.locks[id]
	if l == nil {
		l = &rangeLock{chunks: make(map[lease.Span]*chunkLock)}
		b.locks[id] = l
	}
	l.users++
	b.mu.Unlock()
	if write {
		l.rw.Lock()
	} else {
		l.rw.RLock()
	}
	return l, func() {
		if write {
			l.rw.Unlock()
		} else {
			l.rw.RUnlock()
		}
		b.mu.Lock()
		if l.users--; l.users == 0 {
			delete(b.locks, id)
		}
		b.mu.Unlock()
	}
}

// lockChunk takes the range's lock for reading and the chunk's own lock.
func (b *Bucket) lockChunk(id int64, span lease.Span) func() {
	l, unlockRange := b.lockRange(id, false)
	b.mu.Lock()
	c := l.chunks[span]
	if c == nil {
		c = &chunkLock{}
		l.chunks[span] = c
	}
	c.users++
	b.mu.Unlock()
	c.mu.Lock()
	return func() {
		c.mu.Unlock()
		b.mu.Lock()
		if c.users--; c.users == 0 {
			delete(l.chunks, span)
		}
		b.mu.Unlock()
		unlockRange()
	}
}

func (b *Bucket) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// call is a context for one call to the store: ended by Close or Timeout.
func (b *Bucket) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, b.cfg.Timeout)
}

// closedOr returns ErrClosed when the store was closed (and so the call's
// context canceled), else err.
func (b *Bucket) closedOr(err error) error {
	if b.isClosed() {
		return ErrClosed
	}
	return err
}

// Put implements Store. The chunk is one Put of its known length.
func (b *Bucket) Put(rangeID int64, span lease.Span, data []byte) error {
	if err := chunkfile.CheckSpan(span); err != nil {
		return err
	}
	if b.isClosed() {
		return ErrClosed
	}
	unlock := b.lockChunk(rangeID, span)
	defer unlock()
	ctx, cancel := b.call()
	defer cancel()
	if _, err := b.store.Put(ctx, BucketKey(rangeID, span), bytes.NewReader(data), int64(len(data))); err != nil {
		return b.closedOr(fmt.Errorf("spool: put %d %s: %w", rangeID, ChunkName(span), err))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.record(rangeID, span, int64(len(data)))
	}
	return nil
}

// Read implements Store.
func (b *Bucket) Read(rangeID int64, span lease.Span) ([]byte, error) {
	return chunkfile.ReadAll(b.Open(rangeID, span))
}

// Open implements Store. It asks the store, not the index: a chunk
// another coordinator stored is found at once. The reader streams the
// blob; Timeout bounds the wait for its first byte, not the reading, and
// Close does not cut it.
func (b *Bucket) Open(rangeID int64, span lease.Span) (io.ReadCloser, int64, error) {
	if err := chunkfile.CheckSpan(span); err != nil {
		return nil, 0, err
	}
	if b.isClosed() {
		return nil, 0, ErrClosed
	}
	rc, size, err := blobstore.OpenWithin(b.store, BucketKey(rangeID, span), b.cfg.Timeout)
	if errors.Is(err, blobstore.ErrNotFound) {
		return nil, 0, fmt.Errorf("spool: range %d span %d-%d: %w", rangeID, span.From, span.To, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("spool: open %d %s: %w", rangeID, ChunkName(span), err)
	}
	return rc, size, nil
}

// Drop implements Store. It deletes every blob of the range in the store,
// whoever stored it.
func (b *Bucket) Drop(rangeID int64) error {
	if b.isClosed() {
		return ErrClosed
	}
	_, unlock := b.lockRange(rangeID, true)
	defer unlock()
	ctx, cancel := b.call()
	defer cancel()
	prefix := strconv.FormatInt(rangeID, 10) + "/"
	var stored []lease.Span
	err := b.store.List(ctx, prefix, func(info blobstore.Info) error {
		if id, span, ok := parseBucketKey(info.Key); ok && id == rangeID {
			stored = append(stored, span)
		}
		return nil
	})
	if err != nil {
		return b.closedOr(fmt.Errorf("spool: drop %d: %w", rangeID, err))
	}
	failed := map[lease.Span]bool{}
	for _, span := range stored {
		if derr := b.store.Delete(ctx, BucketKey(rangeID, span)); derr != nil {
			err = derr
			failed[span] = true
		}
	}
	b.mu.Lock()
	if !b.closed {
		// Forget what is gone: the chunks deleted, and those the index had
		// that the store no longer holds.
		for span := range b.chunks[rangeID] {
			if !failed[span] {
				b.record(rangeID, span, -1)
			}
		}
		for _, span := range stored {
			if !failed[span] {
				b.record(rangeID, span, -1) // journals it while a listing runs
			}
		}
	}
	b.mu.Unlock()
	if err != nil {
		return b.closedOr(fmt.Errorf("spool: drop %d: %w", rangeID, err))
	}
	return nil
}

// DropChunk implements Store.
func (b *Bucket) DropChunk(rangeID int64, span lease.Span) error {
	if err := chunkfile.CheckSpan(span); err != nil {
		return err
	}
	if b.isClosed() {
		return ErrClosed
	}
	unlock := b.lockChunk(rangeID, span)
	defer unlock()
	ctx, cancel := b.call()
	defer cancel()
	if err := b.store.Delete(ctx, BucketKey(rangeID, span)); err != nil {
		return b.closedOr(fmt.Errorf("spool: drop %d %s: %w", rangeID, ChunkName(span), err))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.record(rangeID, span, -1)
	}
	return nil
}

// Learn asks the store whether the chunk is stored, records the answer in
// the index, and wakes the chunk's waiters when it is. A coordinator told
// by another that it stored a chunk (a database notification, say) calls
// it, so its streams need not wait for the next Refresh.
func (b *Bucket) Learn(ctx context.Context, rangeID int64, span lease.Span) (bool, error) {
	if err := chunkfile.CheckSpan(span); err != nil {
		return false, err
	}
	if b.isClosed() {
		return false, ErrClosed
	}
	unlock := b.lockChunk(rangeID, span)
	defer unlock()
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	info, err := b.store.Stat(ctx, BucketKey(rangeID, span))
	found := err == nil
	if err != nil && !errors.Is(err, blobstore.ErrNotFound) {
		return false, b.closedOr(fmt.Errorf("spool: stat %d %s: %w", rangeID, ChunkName(span), err))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false, ErrClosed
	}
	if found {
		b.record(rangeID, span, info.Size)
	} else {
		b.record(rangeID, span, -1)
	}
	return found, nil
}

// Ranges lists, in ascending order, the ranges that have chunks in the
// index: for a janitor that drops the ranges that are done (a Put on one
// coordinator that overlapped a Drop on another leaves its chunk behind).
func (b *Bucket) Ranges() []int64 {
	b.mu.Lock()
	ids := make([]int64, 0, len(b.chunks))
	for id := range b.chunks {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	slices.Sort(ids)
	return ids
}

// WaitChunk implements Store. Besides the index it asks the store for the
// chunk every Refresh.
func (b *Bucket) WaitChunk(ctx context.Context, rangeID int64, span lease.Span) error {
	if err := chunkfile.CheckSpan(span); err != nil {
		return err
	}
	return b.waitChunk(ctx, rangeID, span, b.cfg.Refresh, func() bool {
		found, err := b.Learn(ctx, rangeID, span)
		if err != nil && !errors.Is(err, ErrClosed) && ctx.Err() == nil {
			b.cfg.Logger.Warn("spool: ask the bucket for a chunk", "range", rangeID, "span", ChunkName(span), "err", err)
		}
		return found
	})
}

// Close implements Store: it stops the refresher and wakes every waiter
// with ErrClosed. The chunks stay in the store.
func (b *Bucket) Close() error {
	b.mu.Lock()
	closing := b.close()
	b.mu.Unlock()
	if !closing {
		return nil
	}
	b.cancel()
	<-b.done
	return nil
}
