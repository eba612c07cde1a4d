package connlease

import "context"

// Budget hands out the right to hold one connection to the provider open.
// A provider's account allows so many connections in all; coordinators
// that share an account share its Budget (SharedBudget keeps one in the
// database). Every connection a Source opens takes a Slot before it
// dials and holds it while it is open, idle ones included: the start-up
// Check, GROUP and every fetch.
type Budget interface {
	// Acquire waits until a slot is free, or ctx ends.
	Acquire(ctx context.Context) (Slot, error)
}

// Slot is the right to hold one connection open.
type Slot interface {
	// Lost is closed when the slot was lost (it could not be renewed in
	// time, or another holder took it over): the connection that holds it
	// is closed at once.
	Lost() <-chan struct{}
	// Release gives the slot back, once its connection has closed.
	Release()
}

// A Slot may also have a method Expired() bool, reporting that its lease
// may have run out by the local clock before Lost closed (a process paused
// past the lease's TTL): an idle connection on such a slot is closed, not
// reused. SharedBudget's slots have it.
//
// A Slot may also have a method Yield() bool, asked each time its
// connection is put back or taken idle: true closes the connection (QUIT)
// and gives the slot back rather than keeping it idle or handing it to a
// call waiting, so that another coordinator waiting under its fair share
// of the account gets it. SharedBudget's slots have it.
