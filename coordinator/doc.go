// Package coordinator is the coordinator as a library: a Service that holds
// its rules, and a Server, the HTTP API of docs/api.md over it: the node
// API (range leases, streams, batches, group lanes, snapshots), the admin
// API, /healthz, /readyz and /metrics. cmd/coordinator wires them:
//
//	svc, err := coordinator.NewService(cfg)
//	srv := coordinator.NewServer(svc) // an http.Handler; srv.HTTPServer() serves it
//
// # Files
//
// The two layers share the package and keep to their files: service*.go
// and stream.go never read a request or write a response, http*.go hold
// every body, length, limit, status and header. One package rather than
// two, so the HTTP layer hands the Service a batch it decoded, and so
// checked, without the Service checking it again (edgeframe.ValidateBatch
// costs about three decodes), and one Config serves both.
//
//	config.go             Config, of both layers: the HTTP layer's fields come last
//	service.go            Store and the capabilities, Service, NewService, chunk notifications
//	service_ranges.go     range calls: Grant, OpenStream/OpenReplay, Send, CheckBatch, StoreBatch, Finish, Corrupt, ...
//	service_lanes.go      lane calls and snapshots: GrantLane, Next, PutSnapshot, OpenSnapshot, ResetSnapshot
//	service_snapshots.go  the snapshot blobs: names, one upload per lane, pruning
//	service_admin.go      Fleet, Node, Ranges, Results
//	service_releases.go   Releases, ReleaseByID
//	stream.go             Stream: a range's frames, to a FrameWriter
//	metrics.go            Metrics, which both layers count into
//	http.go               Server, NewServer, the routes, auth, HTTPServer, Listen
//	http_ranges.go        the range handlers
//	http_batch.go         the batch handler: fence, body cap, budget, decoding
//	http_stream.go        the stream's FrameWriter: deadlines and flushes
//	http_lanes.go         the lane and snapshot handlers
//	http_admin.go         the admin handlers
//	http_releases.go      the release handlers and the NZB
//	http_errors.go        errors as statuses and JSON bodies
//	http_params.go        path, header and query parameters; JSON bodies
//	http_metrics.go       the latency of each route
//
// # Service
//
// Service has one method per operation, on domain values: Grant,
// OpenStream/OpenReplay and RangeStream.Send, CheckBatch and StoreBatch
// (a decoded batch), Heartbeat, Finish, Corrupt and Release for ranges;
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
// What a store or a spool may lack is declared, not discovered: the
// Store interface names every method the Service calls, each capability
// saying how a store without it answers, and Config.Shared is the spool's
// shared-bucket side, nil for a spool of this coordinator's own.
//
// A snapshot upload goes to a file of its own, made current only by the
// fenced metadata update. Streams write chunks as stored (already gzip),
// with keepalives while chunks are fetched, and check the lease every
// TTL/3. Drain ends the streams in flight with an error frame.
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
// A batch's fence is checked before its body is read: a stale holder's
// batch costs nothing. Batches being decoded share a budget of bytes
// (Config.MaxBatchBytes). The decoded batch goes to the Service.
//
// Streams are flushed with http.ResponseController, and every write to a
// client is bounded by a deadline (Config.WriteTimeout), so a worker that
// stops reading costs one deadline. Server.Drain (the Service's) cuts
// writes blocked on a worker that does not read; call it before
// http.Server.Shutdown.
package coordinator
