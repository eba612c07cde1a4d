package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/edgeindex/edgeindex/connlease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// budgets makes the connection budgets of serve's NNTP sources: one per
// provider, over the database, so the coordinators sharing it share each
// provider's connections (the URL's conns, else --nntp-conns) between them.
type budgets struct {
	store  *sqlstore.Store
	holder string
	log    *slog.Logger

	mu   sync.Mutex
	made []*connlease.SharedBudget
}

func newBudgets(store *sqlstore.Store, holder string, log *slog.Logger) *budgets {
	return &budgets{store: store, holder: holder, log: log}
}

// budget returns the budget of conns connections of provider ("" for the
// unnamed source), held as this coordinator (its owner id).
func (b *budgets) budget(provider string, conns int) (nntp.Budget, error) {
	bud, err := connlease.New(connlease.Config{Store: b.store, Provider: provider, Size: conns, Holder: b.holder,
		Logger: b.log.With("provider", provider)})
	if err != nil {
		return nil, fmt.Errorf("the connection budget of %q: %w", provider, err)
	}
	b.mu.Lock()
	b.made = append(b.made, bud)
	b.mu.Unlock()
	return bud, nil
}

// close gives back every slot still held: call it once the sources are
// closed.
func (b *budgets) close() error {
	b.mu.Lock()
	made := b.made
	b.made = nil
	b.mu.Unlock()
	var errs []error
	for _, bud := range made {
		errs = append(errs, bud.Close())
	}
	return errors.Join(errs...)
}

// andThen returns a func that runs first, then second, and joins their
// errors.
func andThen(first, second func() error) func() error {
	return func() error { return errors.Join(first(), second()) }
}

// printSlots prints each provider's budget (its stored size, the slots
// held and free), then the slots held per provider and coordinator.
func printSlots(w io.Writer, sizes []connlease.BudgetSize, slots []connlease.Lease) {
	if len(sizes) == 0 && len(slots) == 0 {
		return
	}
	name := func(provider string) string {
		if provider == "" {
			return "-"
		}
		return provider
	}
	heldBy := map[string]int{}
	for _, s := range slots {
		heldBy[s.Provider]++
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "")
	fmt.Fprintln(tw, "PROVIDER\tBUDGET\tHELD\tFREE")
	for _, b := range sizes {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", name(b.Provider), b.Size, heldBy[b.Provider], max(0, b.Size-heldBy[b.Provider]))
	}
	if len(slots) > 0 {
		type key struct{ provider, holder string }
		var order []key
		count := map[key][]int{}
		expires := map[key]time.Time{}
		for _, s := range slots {
			k := key{s.Provider, s.Holder}
			if _, ok := count[k]; !ok {
				order = append(order, k)
			}
			count[k] = append(count[k], s.N)
			if s.Expires.After(expires[k]) {
				expires[k] = s.Expires
			}
		}
		fmt.Fprintln(tw, "")
		fmt.Fprintln(tw, "PROVIDER\tCOORDINATOR\tSLOTS HELD\tNUMBERS\tLAST EXPIRES")
		for _, k := range order {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%v\t%s\n", name(k.provider), k.holder, len(count[k]), count[k], expires[k].Format(time.RFC3339))
		}
	}
	tw.Flush()
}
