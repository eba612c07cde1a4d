// Package edge is the worker side of edgeindex: a Client for the
// coordinator's node API (docs/api.md) and a Worker that leases ranges,
// streams their chunks through a Handler and posts the results.
//
// # Client
//
// Client has one method per node API call. It sends the node token as
// "Authorization: Bearer" and a held lease's token as "Lease-Token", and maps
// error answers back to errors with the one table the coordinator uses too
// (api.ErrorOf, in the manner of WTF Dial): every error status comes back as
// an *HTTPError carrying the server's {"error": "...", "code": "..."}, which
// matches under errors.Is by its status and code, never by its sentence:
//
//	409 with code lease_lost  edgeindex.ErrLeaseLost
//	any other 409             edgeindex.ErrConflict
//	404                       edgeindex.ErrNotFound
//	400                       edgeindex.ErrInvalid
//	401, 403                  ErrUnauthorized
//	413                       ErrTooLarge
//	5xx                       ErrServer
//
// A failure in transit is ErrNetwork. Both ErrServer and ErrNetwork are
// retried, with exponential backoff (Config.Backoff doubling to MaxBackoff,
// each wait jittered to between half and all of it) up to Config.Attempts
// tries, for every call but the grants (Lease, LeaseMany and LeaseLane), whose lost
// answer would strand a lease until it expires. A 4xx is never retried.
// PostBatch is retried like the others: a batch that was stored but whose
// answer was lost is answered as a duplicate the second time, which is
// success.
//
// # Worker
//
// Worker.Run loops until its context is cancelled. Each round it asks for up
// to WorkerConfig.Ranges ranges of unordered groups in one call (POST
// /v1/leases; one by default) and works them at once, the handler taking
// one chunk at a time, their final batches that are ready together posted
// in one call (POST /v1/batches), each answer handing over the next range;
// then, for each lane in
// WorkerConfig.Lanes in order, for a lane of an ordered group
// (POST /v1/groups/lease), whose ranges it takes with /next, in article
// order, until none is ready; then it releases the lane. A round without
// work waits WorkerConfig.Idle; a failed one backs off.
//
// For each range it heartbeats every TTL/3 in a goroutine (and the lane's
// grant likewise; with WorkerConfig.Ranges above 1, the heartbeats of
// plain ranges due together go in one POST /v1/heartbeats), opens the
// stream and reads its frames:
//
//   - a keepalive is ignored;
//   - a chunk goes to Handler.HandleChunk as a Chunk whose From is the
//     later of the chunk's start and the range's next, so lines an earlier
//     holder stored are skipped; its Output is posted as the batch
//     [From, To]. A chunk wholly below next is skipped. A range has one
//     batch in flight: the handler works the next chunk while the batch
//     before it is stored, and that batch's answer is taken in before the
//     next is posted (a lane's range whose handler keeps a window, and
//     every final batch, wait for their answer);
//   - once the batches reach the range's end the range is finished, without
//     waiting for the end frame;
//   - a stream cut before its end frame (or silent for
//     WorkerConfig.StreamIdle, though the coordinator sends keepalives) is
//     reopened from next after a backoff: the coordinator streams from the
//     chunk that holds next, and the lease is still held. After
//     Config.Attempts cuts in a row without a stored batch, the range is
//     released;
//   - an error frame means the coordinator gave up waiting for a chunk: the
//     range is released, for a later grant to try again;
//   - a frame the worker cannot take, one whose length is over
//     Config.MaxFrame (edgeframe.ErrFrameTooLarge, refused before anything
//     is allocated for it) or whose payload does not fit a frame
//     (edgeframe.ErrMalformed), reports the chunk the stream was at corrupt,
//     as a bad chunk from the handler does: the same stream would send the
//     same frame again, so a release would only have the range granted again
//     with no attempt counted, while a corrupt report counts one and the
//     range fails at the coordinator's maximum.
//
// A lost lease (a 409 with code lease_lost from any call, or from a
// heartbeat of the range or of its lane) stops the range at once: nothing
// more is posted, finished or released for it. A handler error wrapping overview.ErrBadChunk
// reports the chunk corrupt (POST corrupt with the chunk's start), which
// gives the range back; any other handler error releases the range and
// makes Run back off.
//
// When Run's context is cancelled (the caller wires SIGTERM to it), the
// range in hand is finished if all its batches are stored, and released
// otherwise, with its lane, within WorkerConfig.StopTimeout of a context
// detached from the cancelled one; then Run returns nil.
//
// # Windows of ordered lanes
//
// A Handler that also implements Windowed carries state from range to
// range of a lane. When the worker is granted a lane it loads the lane's
// snapshot (GET, gunzip, LoadWindow), or LoadWindow(nil) when there is
// none. After the last batch of each range of the lane is stored, and before
// that range is finished, it saves the window (SaveWindow, gzip, PUT with
// next = the range's end + 1). Saving before the finish means a crash
// between the two leaves the next holder a range with nothing left to
// stream and a window that already covers it, rather than a window one
// range behind. Windows are managed only for lanes: a Windowed handler's
// state is left alone for ranges of unordered groups.
//
// A range of a lane whose holder died in the middle of it comes to the next
// holder with a next past the snapshot's: the batches of [snapshot next,
// next) are stored, but the window loaded has not seen them. The worker
// then opens the stream with ?from= the snapshot's next
// (Client.StreamFrom) and hands those chunks to the handler again, with
// Chunk.Replay set, dropping their output (it was stored: posting it would
// only be answered as a duplicate); then it goes on from next as usual. So
// the window, and every item after, are the ones an uninterrupted holder
// would have had. The cost falls on the takeover only: at most one range
// is read again. A coordinator that does not know from streams from next;
// the worker logs that the window lacks the chunks it was not sent, and
// carries on. A window older than the range's start is rebuilt from the
// range's start only, since earlier ranges are done. A worker that stops in
// the middle of a range (shutdown, or an error that gives the range back)
// saves the window at next first when every chunk it handed the handler
// has its batch stored, so the next holder has nothing to replay.
//
// Stats reports progress counters (ranges, batches, items, headers, bytes,
// replayed chunks), kept with atomics, for progress bars.
package edge
