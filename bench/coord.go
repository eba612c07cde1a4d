package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// coord is a coordinator wired as cmd/coordinator's serve wires it (store,
// disk spool, prefetcher on the Synthetic source, the HTTP API on a
// loopback port), in this process; or, in a fleet, as serve --storage
// wires it (a spool.Bucket over the chunk store the fleet shares, and the
// chunk notifications of PostgreSQL).
type coord struct {
	store *sqlstore.Store
	spool spool.Store
	api   *coordinator.Server
	http  *http.Server
	url   string

	cancel context.CancelFunc
	bg     chan error
	served chan error
}

type coordConfig struct {
	DB       string // sqlstore URL
	Dir      string // spool and snapshots
	Prefetch bool   // run the prefetcher (serve always does)
	LeaseTTL time.Duration
	// Shared, when set, holds the spool (a spool.Bucket over its "spool"
	// part) and the snapshots of the coordinators of a fleet, as a bucket
	// does for serve --storage; the coordinator then listens for the
	// chunks the others store.
	Shared blobstore.Store
}

func startCoord(ctx context.Context, cfg coordConfig) (_ *coord, err error) {
	c := &coord{bg: make(chan error, 2), served: make(chan error, 1)}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	c.store, err = sqlstore.Open(ctx, cfg.DB, sqlstore.Config{})
	if err != nil {
		return nil, err
	}
	snaps, err := c.openStorage(ctx, cfg)
	if err != nil {
		return nil, err
	}
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	if err != nil {
		return nil, err
	}
	l, err := coordinator.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var pf *prefetch.Prefetcher
	if cfg.Prefetch {
		pf, err = prefetch.New(prefetch.Config{Source: src, Spool: c.spool, Claims: c.store, Targets: c.store,
			Owner: "bench/" + l.Addr().String()})
		if err != nil {
			l.Close()
			return nil, err
		}
	}
	ccfg := coordinator.Config{Store: c.store, Spool: c.spool, Snapshots: snaps, LeaseTTL: cfg.LeaseTTL}
	if pf != nil {
		ccfg.Prefetcher = pf
	}
	if shared, ok := c.spool.(coordinator.SharedSpool); ok && cfg.Shared != nil { // a spool.Bucket
		ccfg.Shared = shared
	}
	svc, err := coordinator.NewService(ccfg)
	if err != nil {
		l.Close()
		return nil, err
	}
	c.api = coordinator.NewServer(svc)
	c.http = c.api.HTTPServer()
	c.url = "http://" + l.Addr().String()
	c.run(ctx, l, pf, cfg.Shared != nil)
	return c, nil
}

// run starts, on a context of their own, the prefetcher when there is one
// and the listening for other coordinators' chunks when the spool is
// shared, each sending its end to c.bg (nil at once when not started), and
// serves l.
func (c *coord) run(ctx context.Context, l net.Listener, pf *prefetch.Prefetcher, shared bool) {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	if pf != nil {
		go func() { c.bg <- pf.Run(pctx) }()
	} else {
		c.bg <- nil
	}
	if shared {
		go func() { c.bg <- c.api.Service().ListenChunks(pctx) }()
	} else {
		c.bg <- nil
	}
	go func() { c.served <- c.http.Serve(l) }()
}

// Close stops the server and the prefetcher and closes the spool and store.
func (c *coord) Close() error {
	var errs []error
	if c.http != nil {
		c.api.Drain()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c.http.Shutdown(sctx)
		cancel()
		if err := <-c.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	if c.cancel != nil {
		c.cancel()
		for range cap(c.bg) {
			if err := <-c.bg; err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, fmt.Errorf("prefetcher or listener: %w", err))
			}
		}
	}
	if c.spool != nil {
		errs = append(errs, c.spool.Close())
	}
	if c.store != nil {
		errs = append(errs, c.store.Close())
	}
	return errors.Join(errs...)
}

// openStorage opens the spool and returns the snapshots: on disk under
// cfg.Dir, or in cfg.Shared.
func (c *coord) openStorage(ctx context.Context, cfg coordConfig) (blobstore.Store, error) {
	if cfg.Shared == nil {
		sp, err := spool.Open(filepath.Join(cfg.Dir, "spool"), spool.Config{})
		if err != nil {
			return nil, err
		}
		c.spool = sp
		return blobstore.OpenDir(filepath.Join(cfg.Dir, "snapshots"))
	}
	part, err := blobstore.Sub(cfg.Shared, "spool")
	if err != nil {
		return nil, err
	}
	if c.spool, err = spool.OpenBucket(ctx, part, spool.BucketConfig{}); err != nil {
		return nil, err
	}
	return blobstore.Sub(cfg.Shared, "snapshots")
}

// startFleet starts k coordinators on one database, sharing one chunk
// store: a directory standing for the bucket, so that the figures measure
// the coordinators, not the object store (see chunkstore for its latency).
func startFleet(ctx context.Context, dbURL, dir string, k int) ([]*coord, error) {
	shared, err := blobstore.OpenDir(filepath.Join(dir, "bucket"))
	if err != nil {
		return nil, err
	}
	var cs []*coord
	for range k {
		c, err := startCoord(ctx, coordConfig{DB: dbURL, Dir: dir, Prefetch: true, Shared: shared})
		if err != nil {
			closeFleet(cs)
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func closeFleet(cs []*coord) error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// fleetClient is c.client for the i-th worker of a fleet: it begins at
// coordinator i mod k and fails over to the others, in turn.
func fleetClient(ctx context.Context, cs []*coord, i int, name string, attempts int) (*edge.Client, error) {
	var failover []string
	for j := 1; j < len(cs); j++ {
		failover = append(failover, cs[(i+j)%len(cs)].url)
	}
	return cs[i%len(cs)].client(ctx, name, attempts, failover...)
}

// client adds a node and returns a client for it that tries each call
// attempts times (0: the client's default), with an HTTP transport
// of its own: each worker is as a process of its own would be, keeping its
// connection alive (a shared http.DefaultTransport keeps only two idle
// connections per host, so 32 goroutines sharing it would reconnect).
// failover lists other coordinators of the database.
func (c *coord) client(ctx context.Context, name string, attempts int, failover ...string) (*edge.Client, error) {
	token, err := node.NewToken()
	if err != nil {
		return nil, err
	}
	if _, err := c.store.AddNode(ctx, name, node.HashToken(token)); err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4
	return edge.NewClient(edge.Config{BaseURL: c.url, Failover: failover, Token: token, HTTP: &http.Client{Transport: tr},
		Attempts: attempts})
}
