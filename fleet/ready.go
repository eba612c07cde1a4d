package fleet

import (
	"time"

	"github.com/edgeindex/edgeindex/fleetcache"
)

// ReadySchema names the shape of GET /readyz.
const ReadySchema = "edgeindex.fleet-reader.ready/v1"

// readyBody is the answer of GET /readyz.
type readyBody struct {
	Schema    string    `json:"schema"`
	Ready     bool      `json:"ready"`
	Meaning   string    `json:"meaning"`
	StartedAt time.Time `json:"startedAt"`
	ServedAt  time.Time `json:"servedAt"`
	// LastFleetRead is how the last fleet read went; null before the first.
	LastFleetRead *fleetcache.ReadInfo `json:"lastFleetRead"`
}

// ready answers GET /readyz from the process alone: it calls no coordinator.
func (c *Coordinators) ready(st fleetcache.ReadyState) any {
	b := readyBody{
		Schema:    ReadySchema,
		Ready:     st.Ready,
		Meaning:   "the reader takes requests; whether the coordinators answer is in lastFleetRead, and is not part of readiness",
		StartedAt: st.StartedAt,
		ServedAt:  st.ServedAt,
	}
	if st.Draining {
		b.Meaning = "the reader is draining before it stops: send requests elsewhere"
	}
	if info, ok := c.lastRead(); ok {
		b.LastFleetRead = &info
	}
	return b
}

// lastRead is the cache's account of the last fleet read, where a read
// refused as not good says which hosts failed and why.
func (c *Coordinators) lastRead() (fleetcache.ReadInfo, bool) {
	info, ok := c.fleet.LastRead()
	if ok && info.Error == fleetcache.ErrRejected.Error() {
		if p := c.lastProblem.Load(); p != nil && *p != "" {
			info.Error += ": " + *p
		}
	}
	return info, ok
}
