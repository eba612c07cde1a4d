package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// newznabFlags adds serve's front door flags.
func (m *Main) newznabFlags(fs *flag.FlagSet) {
	fs.StringVar(&m.Newznab, "newznab", "", "serve the Newznab API and the search page on this address, e.g. 127.0.0.1:5076 (default: off)")
	fs.StringVar(&m.NewznabURL, "newznab-url", "", "the base URL users reach --newznab at, as the feeds' links carry it (default: http:// and the request's Host)")
	fs.IntVar(&m.MinCompletion, "min-completion", 100, "with --newznab: list releases with at least this percent of their parts")
}

// listenNewznab binds --newznab and makes its server, or returns nil, nil
// when --newznab is off.
func (m *Main) listenNewznab(store *sqlstore.Store, log *slog.Logger) (*http.Server, net.Listener, error) {
	if m.Newznab == "" {
		return nil, nil, nil
	}
	if m.MinCompletion < 1 || m.MinCompletion > 100 {
		return nil, nil, usagef("--min-completion %d: 1 to 100", m.MinCompletion)
	}
	h, err := newznab.New(newznab.Config{Store: store, URL: m.NewznabURL, MinCompletion: m.MinCompletion, Logger: log})
	if err != nil {
		return nil, nil, usagef("--newznab: %v", err)
	}
	l, err := net.Listen("tcp", m.Newznab)
	if err != nil {
		return nil, nil, fmt.Errorf("--newznab: %w", err)
	}
	return newznabServer(h, log), l, nil
}

// newznabServer is the HTTP server of a Newznab handler. Its clients are
// the world's: a request or an answer that takes longer than these is cut
// rather than held open, so a client that never reads holds a connection
// for two minutes at most.
func newznabServer(h http.Handler, log *slog.Logger) *http.Server {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	if log != nil {
		srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	}
	return srv
}

const userUsage = "user add NAME [--requests N] [--grabs N] | user rm NAME | user suspend NAME | user resume NAME | user list [--json]"

// userCmd manages the Newznab API's users and their keys.
func (m *Main) userCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("user", flag.ContinueOnError)
	m.commonFlags(fs)
	requests := fs.Int64("requests", 0, "with add: API requests a day (0: no limit)")
	grabs := fs.Int64("grabs", 0, "with add: NZB downloads a day (0: no limit)")
	asJSON := fs.Bool("json", false, "with list: print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || (pos[0] == "list") != (len(pos) == 1) || len(pos) > 2 {
		return usagef(userUsage)
	}
	if *requests < 0 || *grabs < 0 {
		return usagef("--requests and --grabs: 0 (no limit) or more")
	}
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	switch pos[0] {
	case "add":
		key, err := newznab.NewKey()
		if err != nil {
			return err
		}
		if err := store.AddUser(ctx, newznab.User{Name: pos[1], KeyHash: newznab.HashKey(key), RequestLimit: *requests, GrabLimit: *grabs}); err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "user %s added: %s requests and %s grabs a day; its API key, shown only now:\n%s\n",
			pos[1], limitText(*requests), limitText(*grabs), key)
		return nil
	case "rm":
		return store.RemoveUser(ctx, pos[1])
	case "suspend", "resume":
		return store.SuspendUser(ctx, pos[1], pos[0] == "suspend")
	case "list":
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
	return usagef(userUsage)
}

// limitText shows a daily limit; 0 is none.
func limitText(n int64) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}
