package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/sqlstore"
)

var (
	userAddCommand = command{name: "user add", args: "NAME", summary: "add a Newznab API user and print its API key, shown only then",
		setup: (*Main).userAddFlags}
	userRmCommand      = command{name: "user rm", args: "NAME", summary: "remove a Newznab API user", setup: dbCommand((*Main).userRm)}
	userSuspendCommand = command{name: "user suspend", args: "NAME", summary: "refuse a user's key until resumed",
		setup: dbCommand(func(m *Main, ctx context.Context, pos []string) error {
			return m.userSuspend(ctx, "user suspend", pos, true)
		})}
	userResumeCommand = command{name: "user resume", args: "NAME", summary: "take a suspended user's key again",
		setup: dbCommand(func(m *Main, ctx context.Context, pos []string) error {
			return m.userSuspend(ctx, "user resume", pos, false)
		})}
	userListCommand = command{name: "user list", summary: "list the users with their use today", setup: (*Main).userListFlags}
)

func (m *Main) userAddFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	requests := fs.Int64("requests", 0, "API requests a day (0: no limit)")
	grabs := fs.Int64("grabs", 0, "NZB downloads a day (0: no limit)")
	return func(ctx context.Context, pos []string) error {
		name, err := oneArg("user add", "NAME", pos)
		if err != nil {
			return err
		}
		if *requests < 0 || *grabs < 0 {
			return usagef("--requests and --grabs: 0 (no limit) or more")
		}
		store, err := m.open(ctx)
		if err != nil {
			return err
		}
		key, err := newznab.NewKey()
		if err != nil {
			return err
		}
		if err := store.AddUser(ctx, newznab.User{Name: name, KeyHash: newznab.HashKey(key), RequestLimit: *requests, GrabLimit: *grabs}); err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "user %s added: %s requests and %s grabs a day; its API key, shown only now:\n%s\n",
			name, limitText(*requests), limitText(*grabs), key)
		return nil
	}
}

func (m *Main) userRm(ctx context.Context, pos []string) error {
	return m.onName(ctx, "user rm", pos, func(store *sqlstore.Store, name string) error { return store.RemoveUser(ctx, name) })
}

// userSuspend suspends the user, or resumes it.
func (m *Main) userSuspend(ctx context.Context, cmd string, pos []string, suspend bool) error {
	return m.onName(ctx, cmd, pos, func(store *sqlstore.Store, name string) error { return store.SuspendUser(ctx, name, suspend) })
}

func (m *Main) userListFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string) error {
		if err := noArgs("user list", pos); err != nil {
			return err
		}
		store, err := m.open(ctx)
		if err != nil {
			return err
		}
		accounts, err := store.Accounts(ctx, time.Now())
		if err != nil {
			return err
		}
		if *asJSON {
			return m.printJSON(accounts)
		}
		tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tREQUESTS TODAY\tGRABS TODAY\tSUSPENDED\tCREATED")
		for _, a := range accounts {
			fmt.Fprintf(tw, "%s\t%d/%s\t%d/%s\t%t\t%s\n", a.Name, a.Requests, limitText(a.RequestLimit), a.Grabs, limitText(a.GrabLimit),
				a.Suspended, a.Created.Format(time.RFC3339))
		}
		return tw.Flush()
	}
}

// limitText shows a daily limit; 0 is none.
func limitText(n int64) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}
