package connlease

import (
	"context"
	"errors"
	"time"
)

// ErrLost is returned when a slot's lease is no longer held by its
// token: it ran out and was taken over, or was given back.
var ErrLost = errors.New("connlease: the slot was lost")

// Lease is one connection slot of a provider's budget, as a holder leases
// it.
type Lease struct {
	Provider string    `json:"provider"` // "" for the default provider
	N        int       `json:"n"`        // 0 to the budget's size − 1
	Holder   string    `json:"holder"`   // the coordinator holding it
	Token    int64     `json:"token"`    // rises with every take; fences renewals and releases
	Expires  time.Time `json:"expires"`  // when the lease runs out unless renewed
}

// Store keeps the slots' leases. Each call is one atomic statement or
// transaction, so holders sharing a database never hold one slot twice.
type Store interface {
	// TakeSlot leases to holder, until the store's now + ttl, a slot of
	// provider numbered below size that no lease holds or whose lease
	// ran out. It reports false when every such slot is held. The store
	// keeps provider's size: the first take sets it, and a take with
	// another size fails with an error wrapping edgeindex.ErrConflict while
	// any slot of provider is held (and sets it when none is).
	TakeSlot(ctx context.Context, provider string, size int, holder string, ttl time.Duration) (Lease, bool, error)
	// RenewSlot moves the lease's end to now + ttl, if s.Token still
	// holds it; otherwise it fails with an error wrapping ErrLost.
	RenewSlot(ctx context.Context, s Lease, ttl time.Duration) (Lease, error)
	// ReleaseSlot gives the slot back, if s.Token still holds it; a slot
	// already lost is no error.
	ReleaseSlot(ctx context.Context, s Lease) error
	// Slots lists the leases held and not run out, by provider and N.
	Slots(ctx context.Context) ([]Lease, error)
	// BudgetSizes lists the providers' stored sizes, by provider.
	BudgetSizes(ctx context.Context) ([]BudgetSize, error)
	// Demand lists, by holder, the holders of provider's slots whose
	// leases have not run out and the holders that wanted a slot within
	// the last within, by the store's clock; within may be up to
	// 3 × MaxPoll, so a store keeps a want at least that long. TakeSlot records the want
	// when it finds every slot held, and forgets it when it takes one.
	Demand(ctx context.Context, provider string, within time.Duration) ([]Holding, error)
}

// Holding is one holder's demand on a provider's budget.
type Holding struct {
	Holder string `json:"holder" db:"holder"`
	Held   int    `json:"held" db:"held"`   // slots held, leases not run out
	Wants  bool   `json:"wants" db:"wants"` // it found every slot held lately
}

// MaxSize bounds a budget's size: far past any provider's account.
const MaxSize = 10000

// BudgetSize is the size a Store keeps for a provider's budget.
type BudgetSize struct {
	Provider string `json:"provider" db:"provider"`
	Size     int    `json:"size" db:"size"`
}
