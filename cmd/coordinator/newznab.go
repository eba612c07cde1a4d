package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/edgeindex/edgeindex/internal/connlimit"
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
	l, err := bindNewznab(m.Newznab)
	if err != nil {
		return nil, nil, err
	}
	return newznabServer(h, log), l, nil
}

// bindNewznab binds the front door's address. Its clients are the
// world's: it holds at most connlimit's defaults open, 1024 in all and 64
// from one IP address, each closed by newznabServer's timeouts when it
// sends nothing.
func bindNewznab(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--newznab: %w", err)
	}
	return connlimit.New(l, connlimit.Config{})
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
