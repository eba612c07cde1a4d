package connlease_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgeindex/edgeindex/connlease"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// Two coordinators share an account of 2 connections: each Source's
// connections take their slots from a Budget over the one database.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "connlease-example-")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(dir, "x.db"), sqlstore.Config{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	var budgets []*connlease.SharedBudget
	for _, holder := range []string{"coord-a", "coord-b"} {
		b, err := connlease.New(connlease.Config{Store: store, Provider: "eweka", Size: 2, Holder: holder})
		if err != nil {
			panic(err)
		}
		defer b.Close()
		budgets = append(budgets, b)
		// Each would go into its Source: nntp.Config{Budget: b, MaxConns: 2, ...}
	}
	a, _ := budgets[0].Acquire(ctx)
	b, _ := budgets[1].Acquire(ctx)
	slots, _ := store.Slots(ctx)
	for _, s := range slots {
		fmt.Printf("%s slot %d: %s\n", s.Provider, s.N, s.Holder)
	}
	a.Release()
	b.Release()
	// Output:
	// eweka slot 0: coord-a
	// eweka slot 1: coord-b
}
