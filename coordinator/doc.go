// Package coordinator is the coordinator's HTTP API as shared/API.md gives
// it: the node API (range leases, streams, batches, group lanes,
// snapshots), the admin API, /healthz, /readyz and /metrics. Server is an
// http.Handler, so another program can embed it; cmd/coordinator wires it.
//
// Every node call is authenticated by its bearer token (stored only as a
// hash) and fenced by its Lease-Token header; the admin API takes the admin
// token, compared in constant time. Errors map to statuses in one table
// (StatusOf): bad input 400, unknown things 404, a lost lease or a
// conflicting batch 409, a body over the limit 413, each with a JSON body
// {"error": "<one sentence>"}.
//
// Streams write chunks as stored (already gzip), flushed with
// http.ResponseController, with keepalives while chunks are fetched. Drain
// ends the streams in flight with an error frame; call it before
// http.Server.Shutdown.
package coordinator
