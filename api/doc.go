// Package api is edgeindex's wire contract (docs/api.md) in code: every
// request and reply body as a type, the error codes, the one table between
// errors and HTTP statuses, and the admin client. The coordinator encodes
// these types and maps its errors with StatusOf; the edge worker's client
// and the AdminClient decode the same types and map error answers back with
// ErrorOf. Nothing here tells errors apart by their text.
//
// # Types
//
// Range, Lease, GroupLease, Snapshot, Batch and the results' StoredItem are
// aliases of the domain types of the lease, grouplease and batch packages:
// the stores return them and their JSON tags are the wire form, so there is
// one Go type for each object and nothing is copied between a store and a
// socket. The shapes that exist only on the wire (OK, Expiry, CorruptReply,
// SnapshotReset, RangesPage, ResultsPage, Fleet and its parts, NodeDetail,
// ErrorBody) are defined here.
//
// # Errors
//
// Every error answer is {"error": "<one sentence>", "code": "<code>"}. The
// table, one row per error:
//
//	error                        status  code
//	ErrForbidden                 403     forbidden (it is an ErrUnauthorized too)
//	ErrUnauthorized              401     unauthorized
//	ErrMethodNotAllowed          405     method_not_allowed
//	ErrBusy                      503     busy, with Retry-After (429 busy reads back as it)
//	ErrTooLarge                  413     too_large (and edgeframe.ErrTooLarge)
//	ErrInvalid (edgeindex's)     400     invalid (and edgeframe.ErrBadBatch)
//	ErrNotFound (edgeindex's)    404     not_found
//	ErrLeaseLost (edgeindex's)   409     lease_lost
//	ErrConflict (edgeindex's)    409     conflict
//	ErrInternal                  500     internal (anything else)
//
// StatusOf takes the first row an error matches under errors.Is. ErrorOf
// takes the row of an answer's code when its status agrees, else the row
// its status alone names (a 409 without a code is a conflict, never a lost
// lease), else ErrServer for a 5xx and ErrProtocol for anything else.
// ErrBusy and ErrInternal are ErrServer too, which is what a client retries.
//
// A client reads an error answer with ReadError into an *Error, which
// carries the status, the code and the sentence and unwraps to the row's
// sentinel.
//
// # Admin client
//
// AdminClient reads GET /v1/fleet, /v1/nodes/{name}, /v1/ranges,
// /v1/results and /readyz, and resets a lane's snapshot
// (DELETE /v1/groups/{id}/snapshot). The node API's client, with its
// retries and streams, is edge.Client.
package api
