package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
)

// Sentinel errors, tested with errors.Is. ErrMalformed wraps
// edgeindex.ErrInvalid, and ErrGap and ErrOverlap wrap edgeindex.ErrConflict,
// so a caller that maps those to HTTP statuses maps these too.
var (
	// ErrMalformed means the batch itself is wrong: from > to, to past the
	// range's end, an item without a key. HTTP answers 400.
	ErrMalformed = fmt.Errorf("malformed batch: %w", edgeindex.ErrInvalid)
	// ErrGap means from > next: an earlier batch is missing. HTTP answers 409.
	ErrGap = fmt.Errorf("batch gap: %w", edgeindex.ErrConflict)
	// ErrOverlap means from < next <= to: part of the batch is stored. HTTP answers 409.
	ErrOverlap = fmt.Errorf("batch overlap: %w", edgeindex.ErrConflict)
)

// Item is one result a worker produced: a key (such as a binary's hash) and
// any JSON value.
type Item struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// Batch is a worker's results for the articles [From, To] of one range.
// Headers counts the overview lines the worker read in that span.
type Batch struct {
	From    int64  `json:"from"`
	To      int64  `json:"to"`
	Headers int64  `json:"headers"`
	Items   []Item `json:"items"`
	// Missing lists, in ascending order, the article numbers in [From, To]
	// that the chunk did not hold. The coordinator fetches them again
	// later as repair ranges, a few times, and counts those that never
	// arrive. A handler that leaves it empty opts out of repair.
	Missing []int64 `json:"missing,omitempty"`
	// Final says this is the range's last batch: To must be the range's
	// end, and the store finishes the range in the same transaction that
	// stores the batch (Result.Done). A worker whose coordinator does not
	// answer Done finishes the range as before.
	Final bool `json:"final,omitempty"`
}

// Result answers a stored or duplicate batch.
type Result struct {
	Next      int64 `json:"next"`
	Duplicate bool  `json:"duplicate"`
	// Done answers a final batch: the range is done (finished by this
	// batch, or by the earlier attempt this one retries), so the worker
	// does not finish it. It is left out of the JSON when false.
	Done bool `json:"done,omitempty"`
}

// Outcome is what the rule decides for a batch.
type Outcome int

// The outcomes. Classify returns an error for the last three.
const (
	Accept    Outcome = iota // from == next: store it and advance next
	Duplicate                // to < next: a retry of a stored batch; store nothing
	Gap                      // from > next
	Overlap                  // from < next <= to
	Malformed                // from > to, to > end, a final batch short of end, headers negative or more than the span, an item without a key, missing out of order or span
)

// Classify applies the exactly-once rule to a batch for a range whose resume
// point is next and whose last article is end. It returns Accept or Duplicate
// with a nil error, or the outcome with an error wrapping ErrMalformed,
// ErrGap or ErrOverlap that says what was wrong.
func Classify(next, end int64, b Batch) (Outcome, error) {
	switch {
	case b.From > b.To:
		return Malformed, fmt.Errorf("%w: from %d is after to %d", ErrMalformed, b.From, b.To)
	case b.To > end:
		return Malformed, fmt.Errorf("%w: to %d is past the range's end %d", ErrMalformed, b.To, end)
	case b.Final && b.To != end:
		return Malformed, fmt.Errorf("%w: a final batch must reach the range's end %d, not %d", ErrMalformed, end, b.To)
	case b.Headers < 0:
		return Malformed, fmt.Errorf("%w: headers %d is negative", ErrMalformed, b.Headers)
	case !HeadersFit(b.From, b.To, b.Headers):
		return Malformed, fmt.Errorf("%w: headers %d is more than the %d..%d span holds", ErrMalformed, b.Headers, b.From, b.To)
	}
	for i, it := range b.Items {
		if it.Key == "" {
			return Malformed, fmt.Errorf("%w: item %d has no key", ErrMalformed, i)
		}
	}
	for i, n := range b.Missing {
		if n < b.From || n > b.To || (i > 0 && n <= b.Missing[i-1]) {
			return Malformed, fmt.Errorf("%w: missing article %d: the list must ascend within %d..%d", ErrMalformed, n, b.From, b.To)
		}
	}
	switch {
	case b.From == next:
		return Accept, nil
	case b.To < next:
		return Duplicate, nil
	case b.From > next:
		return Gap, fmt.Errorf("%w: batch starts at %d but the range's next is %d", ErrGap, b.From, next)
	default:
		return Overlap, fmt.Errorf("%w: batch %d..%d overlaps stored articles below next %d", ErrOverlap, b.From, b.To, next)
	}
}

// HeadersFit reports whether headers overview lines fit the span
// [from, to], one line per article: 0 <= headers <= to-from+1. It is what
// keeps a node's count from overflowing a range's or a lane's sum. It
// computes the span without overflow for any from <= to.
func HeadersFit(from, to, headers int64) bool {
	if headers < 0 || from > to {
		return false
	}
	return headers == 0 || uint64(headers-1) <= uint64(to)-uint64(from)
}

// Stored is one item in the results feed.
type Stored struct {
	ID    int64           `json:"id"`
	Range int64           `json:"range"`
	From  int64           `json:"from"`
	To    int64           `json:"to"`
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// Query selects a page of the results feed. The zero Query reads the first
// page of every group.
type Query struct {
	Group string // empty: every group
	After string // an opaque cursor from a previous Page; empty: the start
	Limit int    // 0: 100; at most 10000
}

// Page is one page of the results feed. Next is the cursor to read what
// comes after this page; when nothing new was stored it is the cursor asked
// for. A reader keeps polling with the last Next it got.
type Page struct {
	Results []Stored `json:"results"`
	Next    string   `json:"next"`
}

// Store stores batches under the range lease's fence and serves the feed.
type Store interface {
	// Put stores b for the range if f holds its lease: items, next = to+1 and
	// headers += b.Headers in one transaction with the fence check. A retry
	// of a stored batch gets Result{Duplicate: true} and stores nothing.
	// A final batch (b.Final, b.To the range's end) also finishes the range
	// in that transaction, as lease.Store.Finish does, and gets Done; so
	// does a final batch that is a duplicate while f holds the lease. A
	// final batch for a range that is done and whose last grant was f's
	// token is the retry of the one that finished it: Result{Next: end+1,
	// Duplicate: true, Done: true}, nothing written.
	Put(ctx context.Context, rangeID int64, f lease.Fence, b Batch) (Result, error)
	// PutMany is Put for each entry, made at once: each entry is decided
	// and fenced on its own, with the answer Put would have given it
	// alone, entries of different ranges in any order (a call names a
	// range once). With ttl > 0, an entry that finishes its range also
	// grants its node the next range for ttl, as a PutThenGrant would
	// (Answer.Lease, Answer.Tried); 0 grants nothing. The answers are in
	// the entries' order. It fails as a whole, with no answers, only when
	// ctx ends first or the store is closed: some entries may then have
	// been stored, as with a Put whose answer is lost.
	PutMany(ctx context.Context, entries []Entry, ttl time.Duration) ([]Answer, error)
	// Results pages through stored items in storage order; each stored item
	// appears exactly once.
	Results(ctx context.Context, q Query) (Page, error)
	// Batches lists a node's stored batches, newest first, with ids below
	// before (0: from the newest), at most limit (0: 50).
	Batches(ctx context.Context, node string, before int64, limit int) ([]Record, error)
}

// Entry is one batch of Store.PutMany: Batch for range RangeID, under Fence.
type Entry struct {
	RangeID int64
	Fence   lease.Fence
	Batch   Batch
}

// Answer is what Store.PutMany answered an Entry: Put's result or error,
// and the lease granted after it when one was asked for (Tried says the
// grant was tried in the write that stored the entry; Lease is nil then
// when there was no work). A caller whose entry finished its range and was
// not Tried grants the usual way if it wants one.
type Answer struct {
	Result Result
	Lease  *lease.Lease
	Tried  bool
	Err    error
}

// Record is one stored batch, as a node's detail lists it.
type Record struct {
	ID      int64     `json:"id"`
	Range   int64     `json:"range"`
	From    int64     `json:"from"`
	To      int64     `json:"to"`
	Headers int64     `json:"headers"`
	Items   int64     `json:"items"`
	At      time.Time `json:"at"`
}

// ErrBadCursor means a feed cursor was not one this store handed out.
var ErrBadCursor = fmt.Errorf("bad cursor: %w", edgeindex.ErrInvalid)
