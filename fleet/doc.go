// Package fleet reads the fleets of one or more coordinators and serves
// them to any number of dashboards: the fleet reader. cmd/fleet-reader is a
// thin main over it; any other tool can embed it.
//
// Reader is what it offers: read the fleet (every coordinator's GET
// /v1/fleet at once) and read a seat (one node's detail, from its
// coordinator's GET /v1/nodes/{name}). Coordinators is the Reader of this
// package, built with New from a Config whose zero value means the defaults
// but for the coordinators' URLs and the admin token:
//
//	r, err := fleet.New(fleet.Config{Coordinators: urls, Token: token})
//	...
//	defer r.Close()
//	a, err := r.Fleet(ctx)
//	for _, h := range a.Read.Hosts() { ... }
//
// # Reads
//
// One fleet read reads every coordinator at once, within Config.Timeout. A
// host's status is StatusOK, StatusUnreachable (a network error or no
// answer in time), StatusUnauthorized (the coordinator answered 401 or 403)
// or StatusError (any other status, or an answer that is not a fleet). The
// reads go through a fleetcache.Cache: the first call waits for the first
// read; later ones are answered at once from the last good read, current
// within Config.Keep and stale after it, when exactly one background read
// starts. Nothing polls on a timer. A read in which any host failed is
// never kept: it is answered to the call that waited for it (Answer.Kept is
// false), and the next call reads again; once a good read exists, a failed
// refresh leaves it served, still stale.
//
// A seat read belongs to the fleet read it was made under: it is kept 10 s,
// at most 64 of them, for callers under the same kept fleet read, and not
// at all under a read that was not kept.
//
// # Rates
//
// A kept read adds its sample to the last Config.RateReads; the rates
// (Rates) are computed and encoded then, once: articles/s per coordinator
// and per lane between consecutive kept reads, over the coordinators' own
// `at`s, and each tail lane's lag. A read that is not kept adds nothing, so
// the next kept read's step spans it. The rates and the dashboard follow at
// most Config.MaxLanes lanes.
//
// # HTTP
//
// Handler serves the routes as one http.Handler, and Server as a
// fleetcache.Server that listens and drains on its own: GET /v1/fleet (the
// hosts, the rates and how the read was served), GET
// /v1/seat?key=HOST/NODE, GET /readyz (which calls no coordinator), and GET
// /, an HTML dashboard of the same read (hosts, nodes and their leases,
// groups and their lanes with the planner's last error, the rates with
// inline SVG sparklines, no script). docs/api.md's "Fleet reader" section
// is the wire contract of these routes.
//
// Package fleettest runs a real coordinator for the tests of a tool that
// embeds the reader.
package fleet
