// Package coordinator is the coordinator as a library: a Service that holds
// its rules, and a Server, the HTTP API of docs/api.md over it: the node
// API (range leases, streams, batches, group lanes, snapshots), the admin
// API, /healthz, /readyz and /metrics. cmd/coordinator wires them.
//
// # Service
//
// Service has one method per operation: Grant, OpenStream/OpenReplay and
// RangeStream.Send, PostBatch (a body, the route's way) and StoreBatch (a
// decoded batch), Heartbeat, Finish, Corrupt and Release for ranges;
// GrantLane, Next, HeartbeatLane, ReleaseLane, PutSnapshot, OpenSnapshot and
// ResetSnapshot for lanes; Fleet, Node, Ranges and Results for the admin.
// It owns the store, the spool and the corpus, the snapshot files and the
// prefetch kick (the Prefetch interface, which *prefetch.Prefetcher
// satisfies), and ties them together: a finish drops the range's spool, a
// corrupt chunk leaves the spool and, when the range's chunks live there
// (spool.InCorpus), the corpus, a snapshot file becomes current only
// through the fenced metadata update. A program or a test drives it
// without HTTP (see ExampleService).
//
// Fences are checked before a body is read: a stale holder's batch or
// snapshot costs nothing. Batches being decoded share a budget of bytes
// (Config.MaxBatchBytes). A snapshot upload goes to a file of its own, made
// current only by the fenced metadata update. Streams write chunks as
// stored (already gzip), with keepalives while chunks are fetched, and
// check the lease every TTL/3. Drain ends the streams in flight with an
// error frame.
//
// # Server
//
// The Server's handlers parse a request, call the Service and write its
// answer as the api package's types. Every node call is authenticated by
// its bearer token (stored only as a hash) and fenced by its Lease-Token
// header; the admin API takes the admin token, compared in constant time.
// Errors map to statuses and codes through api.StatusOf, the one table the
// clients read back with api.ErrorOf: bad input 400, unknown things 404, a
// lost lease or a conflicting batch 409, a body over the limit 413, no
// room for a batch 503 with Retry-After, each with a JSON body
// {"error": "<one sentence>", "code": "<code>"}. Internal detail goes to
// the log only.
//
// Streams are flushed with http.ResponseController, and every write to a
// client is bounded by a deadline (Config.WriteTimeout), so a worker that
// stops reading costs one deadline. Server.Drain (the Service's) cuts
// writes blocked on a worker that does not read; call it before
// http.Server.Shutdown.
package coordinator
