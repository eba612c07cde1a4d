package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/lease"
)

var snapshotResetCommand = command{name: "snapshot reset", args: "GROUP",
	summary: "forget a lane's snapshot, so that its next upload may start anywhere", setup: (*Main).snapshotResetFlags}

func (m *Main) snapshotResetFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	m.storageFlag(fs)
	laneName := fs.String("lane", "history", "history or tail")
	provider := providerFlag(fs)
	return func(ctx context.Context, pos []string) error {
		name, err := groupArg("snapshot reset", "GROUP", pos, *provider)
		if err != nil {
			return err
		}
		ln, err := lease.ParseLane(*laneName)
		if err != nil {
			return usagef("%v", err)
		}
		return m.snapshotReset(ctx, name, ln)
	}
}

func (m *Main) snapshotReset(ctx context.Context, name string, ln lease.Lane) error {
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	g, err := store.Group(ctx, name)
	if err != nil {
		return err
	}
	snaps, closeSnaps, err := m.snapshots(ctx)
	if err != nil {
		return err
	}
	defer closeSnaps()
	old, err := coordinator.ResetSnapshot(ctx, store, snaps, g.ID, ln)
	if err != nil {
		return err
	}
	if old == nil {
		fmt.Fprintf(m.Stdout, "%s %s lane had no snapshot\n", g.Name, ln)
		return nil
	}
	fmt.Fprintf(m.Stdout, "%s %s lane: snapshot at %d reset; the next upload may start anywhere\n", g.Name, ln, old.Next)
	return nil
}
