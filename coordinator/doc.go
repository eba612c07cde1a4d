// Package coordinator is the coordinator's HTTP API as shared/API.md gives
// it: the node API (range leases, streams, batches, group lanes,
// snapshots), the admin API, /healthz, /readyz and /metrics. Server is an
// http.Handler, so another program can embed it; cmd/coordinator wires it.
//
// Every node call is authenticated by its bearer token (stored only as a
// hash) and fenced by its Lease-Token header; the admin API takes the admin
// token, compared in constant time. Errors map to statuses and codes in one
// table (StatusOf, CodeOf): bad input 400, unknown things 404, a lost lease
// or a conflicting batch 409, a body over the limit 413, no room for a
// batch 503 with Retry-After, each with a JSON body
// {"error": "<one sentence>", "code": "<code>"}. Internal detail goes to the
// log only.
//
// Fences are checked before a body is read: a stale holder's batch or
// snapshot costs nothing. Batches being decoded share a budget of bytes
// (Config.MaxBatchBytes). A snapshot upload goes to a file of its own, made
// current only by the fenced metadata update.
//
// Streams write chunks as stored (already gzip), flushed with
// http.ResponseController, with keepalives while chunks are fetched. Every
// write to a client is bounded by a deadline (Config.WriteTimeout), so a
// worker that stops reading costs one deadline. Drain ends the streams in
// flight with an error frame, and cuts writes blocked on a worker that does
// not read; call it before http.Server.Shutdown.
package coordinator
