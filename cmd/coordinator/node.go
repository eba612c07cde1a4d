package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/sqlstore"
)

var (
	nodeAddCommand = command{name: "node add", args: "NAME", summary: "add an edge node and print its token, alone, on one line",
		setup: dbCommand((*Main).nodeAdd)}
	nodeRmCommand = command{name: "node rm", args: "NAME", summary: "remove a node: its tokens stop working and its leases are fenced",
		setup: dbCommand((*Main).nodeRm)}
	nodeListCommand = command{name: "node list", summary: "list the nodes and when each was last seen",
		setup: dbCommand((*Main).nodeList)}
)

// dbCommand is the setup of a command that takes only --db and --data.
func dbCommand(run func(m *Main, ctx context.Context, pos []string) error) func(*Main, *flag.FlagSet) func(context.Context, []string) error {
	return func(m *Main, fs *flag.FlagSet) func(context.Context, []string) error {
		m.commonFlags(fs)
		return func(ctx context.Context, pos []string) error { return run(m, ctx, pos) }
	}
}

func (m *Main) nodeAdd(ctx context.Context, pos []string) error {
	name, err := oneArg("node add", "NAME", pos)
	if err != nil {
		return err
	}
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	token, err := node.NewToken()
	if err != nil {
		return err
	}
	if _, err := store.AddNode(ctx, name, node.HashToken(token)); err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, token)
	return nil
}

func (m *Main) nodeRm(ctx context.Context, pos []string) error {
	return m.onName(ctx, "node rm", pos, func(store *sqlstore.Store, name string) error { return store.RemoveNode(ctx, name) })
}

// onName runs fn on the database and the one argument, NAME, of cmd.
func (m *Main) onName(ctx context.Context, cmd string, pos []string, fn func(store *sqlstore.Store, name string) error) error {
	name, err := oneArg(cmd, "NAME", pos)
	if err != nil {
		return err
	}
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	return fn(store, name)
}

func (m *Main) nodeList(ctx context.Context, pos []string) error {
	if err := noArgs("node list", pos); err != nil {
		return err
	}
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	nodes, err := store.Nodes(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCREATED\tLAST SEEN")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Name, n.CreatedAt.Format(time.RFC3339), n.LastSeen.Format(time.RFC3339))
	}
	return tw.Flush()
}
