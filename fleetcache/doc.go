// Package fleetcache serves the last good read of something slow to any number
// of readers. It is generic and depends on no other package of edgeindex: the
// fleet reader (cmd/fleet-reader) is built on it, and any other tool can embed
// it.
//
// It holds three things.
//
// Cache is a stale-while-revalidate cache of one value, built over a ReadFunc
// and a Good predicate:
//
//   - the first request waits for the first read, and concurrent first callers
//     share that one read;
//   - after that, every request is answered at once from the last good read:
//     within Config.Keep it is current; after Keep it is labelled stale and
//     exactly one background refresh starts;
//   - a read runs detached from the caller that started it, with its own
//     Config.Timeout, so a caller that goes away cancels nothing;
//   - nothing runs on a timer: a read starts only inside Get, and no goroutine
//     is left while nobody asks;
//   - a read that fails, panics (ErrPanic) or that Good rejects (ErrRejected)
//     is never kept; the previous good read is served, still stale, and the
//     next request may start another refresh;
//   - with Config.MaxStale, a read older than that is not served when its
//     refresh fails: Get returns ErrTooStale instead.
//
// A hit is one atomic pointer load and one read of the monotonic clock, with no
// lock and no allocation. Every Answer carries Meta (servedAt, polledAt, ages,
// stale, refreshing) and the Generation of the read, which numbers the good
// reads 1, 2, 3...
//
// Seats is a keyed cache of smaller reads that belong to one generation of the
// main read: an entry is reused only by callers of the same generation, within
// a TTL (10 s), at most 64 of them, least recently used evicted first.
// Concurrent callers of one key share one read. Generation 0, which a Cache
// gives every read it did not keep, belongs to no main read: a seat read for
// it is its caller's alone and is never kept.
//
// Server is the read-only reader's HTTP server: GET and HEAD on the configured
// routes, 404 for an unknown path, 405 with "Allow: GET, HEAD" for any other
// method, errors as {"error": "..."}, Cache-Control and Age from a reply's
// Meta, a strong ETag from the body with 304 for a matching If-None-Match, and
// a readiness route answered by the process alone that turns 503 while the
// server drains. Server.Run binds 127.0.0.1 by default, before serving, and
// stops gracefully within two seconds of its context being done:
//
//	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
//	defer stop()
//	fleet, err := fleetcache.New(readFleet, allHostsOK, fleetcache.Config{Keep: 15 * time.Second})
//	...
//	srv, err := fleetcache.NewServer(fleetcache.ServerConfig{Routes: []fleetcache.Route{{
//		Path: "/v1/fleet",
//		Handle: func(r *http.Request) (fleetcache.Reply, error) {
//			a, err := fleet.Get(r.Context())
//			if err != nil {
//				return fleetcache.Reply{}, err
//			}
//			return fleetcache.Reply{Value: a.Value, Meta: a.Meta}, nil
//		},
//	}}})
//	...
//	err = srv.Run(ctx)
package fleetcache
