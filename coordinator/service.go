package coordinator

import (
	"context"
	"time"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/release"
)

// Store is every store the Service uses, in one value: sqlstore.Store is
// one. It is the one seam between the coordinator and its database, so a
// Service takes one value where it would take six, and a test wraps one
// (embedding a Store and overriding a method). Its parts:
//
//   - lease.Store: range leases (grant, check, heartbeat, finish, corrupt,
//     release) and the admin's range pages;
//   - batch.Store: the batch rule (Put) and the results feed;
//   - grouplease.Catalog, grouplease.Store and grouplease.SnapshotStore:
//     groups, the lanes of ordered groups, and the lanes' snapshot
//     metadata;
//   - node.Store: node tokens and their details;
//   - the rest, below, the capabilities a store may lack: each says how
//     a store without it answers.
//
// storetest's Backend is the conformance suite's union, with planning and
// the providers' connection budgets.
type Store interface {
	lease.Store
	batch.Store
	grouplease.Catalog
	grouplease.Store
	grouplease.SnapshotStore
	node.Store
	// PutThenGrant stores a final batch and grants f.Node's next range in
	// the same statement (sqlstore's): tried says it did try the grant;
	// a store that cannot returns false, and the Service grants after.
	PutThenGrant(ctx context.Context, rangeID int64, f lease.Fence, b batch.Batch, ttl time.Duration) (res batch.Result, next *lease.Lease, tried bool, err error)
	// Plans lists the groups' plans, for the fleet view
	// (grouplease.PlanStore's); a store that plans nothing returns none.
	Plans(ctx context.Context) ([]grouplease.PlanStatus, error)
	// PlanErrors lists the planner's last failure of each group that has
	// one (grouplease.PlanStore's); a store that plans nothing returns none.
	PlanErrors(ctx context.Context) (map[int64]grouplease.PlanError, error)
	// ListenChunks hears, until ctx ends, the chunks every coordinator on
	// the store stores (sqlstore's: PostgreSQL's LISTEN/NOTIFY); a store
	// that cannot hear them returns nil at once (SQLite).
	ListenChunks(ctx context.Context, stored func(rangeID int64, span lease.Span), missed func()) error
	// Releases and ReleaseByID read the releases built from the results
	// feed (release.Store's); a store without them answers
	// release.ErrNotFound.
	Releases(ctx context.Context, q release.Query) (release.Page, error)
	ReleaseByID(ctx context.Context, id int64) (release.Release, error)
	// ReleaseDetails and ReleaseFiles read a release in pieces, as
	// newznab.Store's do: the release with its first files files and no
	// parts, then each file with its parts, a few at a time.
	ReleaseDetails(ctx context.Context, id int64, files int) (release.Release, error)
	ReleaseFiles(ctx context.Context, id int64, each func(release.File) error) error
	// Ping checks that the database answers (/readyz).
	Ping(ctx context.Context) error
}

// Prefetch is what the Service needs of a prefetcher: *prefetch.Prefetcher is
// one. Kick asks for a pass soon (a stream opened, a chunk was dropped);
// Notify returns a channel closed when the next chunk is stored, which a
// stream takes before it looks for a chunk and then waits on; Stored
// closes it for a chunk stored elsewhere (ChunkStored).
type Prefetch interface {
	Kick()
	Notify() <-chan struct{}
	Stored()
}

// SharedSpool is a spool in storage that coordinators share (spool.Bucket
// is one): it is told of a chunk another coordinator stored, and lists its
// storage again when it may have missed some.
type SharedSpool interface {
	// Learn adds a chunk stored elsewhere to the spool's index.
	Learn(ctx context.Context, rangeID int64, span lease.Span) (bool, error)
	// Refresh lists the shared storage again.
	Refresh(ctx context.Context) error
}

// Service is the coordinator's operations, with no HTTP in them: it owns
// the store, the chunk storage (spool and corpus), the snapshot blobs and
// the prefetch kick, and holds the rules that tie them together (a finish
// drops the range's spool, a corrupt chunk leaves the spool and the corpus,
// a snapshot blob becomes current only through the fenced metadata update).
// The Server is a thin HTTP layer over it; a program, the demo or a test
// may call it directly.
//
// Every call that acts on a held lease takes its lease.Fence (the node's
// name and the grant's token) and fails with an error wrapping
// edgeindex.ErrLeaseLost when it no longer holds. Errors wrap the sentinels of
// the lease, grouplease, batch and api packages; api.StatusOf maps them to
// HTTP statuses.
//
// A Service is safe for concurrent use.
type Service struct {
	cfg   Config
	snaps *snapshotFiles

	streams     context.Context // cancelled by Drain: streams end with an error frame
	stopStreams context.CancelFunc
	logs        bool // the Config had a Logger
}

// NewService checks cfg and returns a Service.
func NewService(cfg Config) (*Service, error) {
	logs := cfg.Logger != nil
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, snaps: newSnapshotFiles(cfg.Snapshots), logs: logs}
	s.streams, s.stopStreams = context.WithCancel(context.Background())
	return s, nil
}

// Drain ends the streams in flight with an error frame.
func (s *Service) Drain() { s.stopStreams() }

// Ping checks that the store answers.
func (s *Service) Ping(ctx context.Context) error { return s.cfg.Store.Ping(ctx) }

// LeaseTTL is the TTL of the Service's grants.
func (s *Service) LeaseTTL() time.Duration { return s.cfg.LeaseTTL }

// ListenChunks hears, until ctx ends, the chunks the coordinators sharing
// the Store fetch (Store.ListenChunks), and calls ChunkStored for each and
// ChunksMissed when some may have been missed, so that a stream waiting
// here for a chunk that another coordinator fetched into the storage they
// share gets it at once. It returns ctx's error, or at once nil when the
// Store does not listen; serve runs it beside the prefetcher.
func (s *Service) ListenChunks(ctx context.Context) error {
	return s.cfg.Store.ListenChunks(ctx,
		func(id int64, span lease.Span) { s.ChunkStored(ctx, id, span) },
		func() {
			s.cfg.Logger.Info("listening for chunks again after a lost connection; looking at the spool again")
			s.ChunksMissed(ctx)
		})
}

// ChunkStored tells the Service that a chunk was stored into the storage
// it shares with other coordinators (sqlstore.Store.ListenChunks hears
// it): a spool that keeps an index of a shared bucket learns it
// (Config.Shared), and the streams waiting for a chunk look again at
// once, rather than at their next keepalive.
func (s *Service) ChunkStored(ctx context.Context, rangeID int64, span lease.Span) {
	s.wakeStreams() // a stream opens its chunk in the storage itself
	if s.cfg.Shared != nil && !s.cfg.Spool.Has(rangeID, span) {
		if _, err := s.cfg.Shared.Learn(ctx, rangeID, span); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("learn a chunk another coordinator stored", "range", rangeID, "from", span.From, "err", err)
		}
	}
}

// ChunksMissed tells the Service that it may have missed chunks stored
// elsewhere (the notifications' connection was lost): a spool that keeps
// an index of a shared bucket lists it again, and the waiting streams look
// again.
func (s *Service) ChunksMissed(ctx context.Context) {
	if s.cfg.Shared != nil {
		if err := s.cfg.Shared.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("list the spool's bucket again", "err", err)
		}
	}
	s.wakeStreams()
}

// wakeStreams makes the waiting streams look for their chunks again: they
// wait on the prefetcher's Notify, or the spool's when there is none
// (which a learning spool wakes by itself).
func (s *Service) wakeStreams() {
	if s.cfg.Prefetcher != nil {
		s.cfg.Prefetcher.Stored()
	}
}

func (s *Service) kick() {
	if s.cfg.Prefetcher != nil {
		s.cfg.Prefetcher.Kick()
	}
}
