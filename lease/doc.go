// Package lease holds the range lease domain of edgeindex: a Range of
// article numbers, the Lease that grants it to one node, the fencing token
// that strictly increases with every grant, the chunk-span maths, and
// Store, the interface every backend implements.
//
// Fencing: every call that acts on a held lease carries a Fence (the node
// and the token it was granted). A store checks the fence in the same
// statement or transaction as its write, so a worker that paused past its
// TTL, and whose range was granted to another, can never store anything:
// it gets ErrLeaseLost.
//
// An expired lease is only eligible to be granted again. Until another grant
// happens, the holder's heartbeat with the current token renews it.
//
// Errors are the edgeindex package's sentinels, tested with errors.Is:
// ErrLeaseLost, ErrNotFound, ErrInvalid (bad input, nothing written) and
// ErrConflict; ErrNoWork is lease's own.
package lease
