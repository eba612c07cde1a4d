package fleet

import (
	"net/http"

	"github.com/edgeindex/edgeindex/fleetcache"
)

// Handler returns the reader's routes as one http.Handler: GET /v1/fleet,
// GET /v1/seat, GET /readyz and GET / (the dashboard), as docs/api.md's
// "Fleet reader" section names them; any other path gets 404, any other
// method 405. Mount it at the root of a server or a host of its own: the
// dashboard links to /v1/fleet and /v1/seat. Its /readyz never drains: a
// tool that listens on its own and stops gracefully uses Server.
func (c *Coordinators) Handler() http.Handler { return c.handler }

// Server returns a fleetcache.Server of the reader's routes (see Handler),
// with cfg's Routes beside them. cfg.Ready, when nil, is the reader's
// /readyz body, which tells how the last fleet read went; cfg.Clock, when
// nil, is Config.Clock. Listen and Serve it, and Close the reader after.
func (c *Coordinators) Server(cfg fleetcache.ServerConfig) (*fleetcache.Server, error) {
	cfg.Routes = append(c.routes(), cfg.Routes...)
	if cfg.Ready == nil {
		cfg.Ready = c.ready
	}
	if cfg.Clock == nil {
		cfg.Clock = c.cfg.Clock
	}
	return fleetcache.NewServer(cfg)
}

// routes are the reader's own routes; fleetcache.Server adds /readyz.
func (c *Coordinators) routes() []fleetcache.Route {
	return []fleetcache.Route{
		{Path: "/v1/fleet", Handle: c.handleFleet},
		{Path: "/v1/seat", Handle: c.handleSeat},
		{Path: "/", Handle: c.handleDashboard},
	}
}
