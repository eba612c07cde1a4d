package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/postproc"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// releaseFlags adds serve's release builder flags.
func (m *Main) releaseFlags(fs *flag.FlagSet) {
	fs.BoolVar(&m.Releases, "releases", true, "build releases from the results feed (--releases=false: off)")
	fs.DurationVar(&m.Release.Window, "release-window", release.DefaultWindow, "how far apart in posting date a release's files may be")
	fs.DurationVar(&m.Release.Interval, "release-interval", release.DefaultInterval, "how often the release builder reads the feed once it has caught up")
	fs.Float64Var(&m.Release.Share, "release-share", release.DefaultShare, "the most of its time the release builder spends writing while behind the feed (0.01 to 1; 1: no waits)")
	fs.BoolVar(&m.PostProc, "postproc", true, "post-process releases: read their NFO, PAR2 index and archive headers from an NNTP source (--postproc=false: off)")
	fs.IntVar(&m.BodyConns, "body-conns", 1, "the connections of each NNTP source that post-processing may read article bodies on at once")
}

// newPostProc returns serve's post-processor, its counts exported on
// metrics, when --postproc is on and a source reads bodies; nil
// otherwise.
func (m *Main) newPostProc(store *sqlstore.Store, bodies postproc.Bodies, metrics *coordinator.Metrics, log *slog.Logger) (*postproc.Processor, error) {
	if !m.PostProc || bodies == nil {
		return nil, nil
	}
	p, err := postproc.New(postproc.Config{Store: store, Bodies: bodies, Logger: log})
	if err != nil {
		return nil, err
	}
	metrics.WatchPostProc(func() coordinator.PostProcStats {
		st := p.Stats()
		out := coordinator.PostProcStats{Done: st.Done, Failed: st.Failed, Bodies: st.Bodies, Busy: st.Busy}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out.Pending, out.GivenUp, _ = store.PostProcCounts(ctx)
		return out
	})
	return p, nil
}

// runPostProc runs p until ctx ends; nil p returns at once.
func runPostProc(ctx context.Context, p *postproc.Processor, log *slog.Logger) error {
	if p == nil {
		return nil
	}
	log.Info("post-processing running")
	if err := p.Run(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// runReleases runs the release builder until ctx ends, when --releases is
// on; it returns nil at once when it is off.
func (m *Main) runReleases(ctx context.Context, store *sqlstore.Store, log *slog.Logger) error {
	if !m.Releases {
		return nil
	}
	cfg := m.Release
	cfg.Store, cfg.Logger = store, log
	b, err := release.NewBuilder(cfg)
	if err != nil {
		log.Error("release builder", "err", err)
		return err
	}
	log.Info("release builder running", "window", cfg.Window, "interval", cfg.Interval)
	if err := b.Run(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

var (
	releasesListCommand = command{name: "releases list", summary: "list the releases built, a page at a time (releases alone lists too)",
		setup: (*Main).releasesListFlags}
	releasesBuildCommand = command{name: "releases build", summary: "run the release builder on its own (--once: to the feed's end, then exit)",
		setup: (*Main).releasesBuildFlags}
)

func (m *Main) releasesListFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	group := fs.String("group", "", "only releases with a file in this group")
	after := fs.String("after", "", "the cursor a previous page printed")
	limit := fs.Int("limit", 100, "releases per page, at most 1000")
	asJSON := fs.Bool("json", false, "print the page as JSON")
	return func(ctx context.Context, pos []string) error {
		if err := noArgs("releases list", pos); err != nil {
			return err
		}
		store, err := m.open(ctx)
		if err != nil {
			return err
		}
		page, err := store.Releases(ctx, release.Query{Group: *group, After: *after, Limit: *limit})
		if err != nil {
			return err
		}
		if *asJSON {
			return m.printJSON(page)
		}
		return printReleases(m.Stdout, page)
	}
}

// printReleases prints a page of releases as a table, then its cursor.
func printReleases(w io.Writer, page release.Page) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPOSTER\tFILES\tPARTS\tCOMPLETE\tBYTES\tGROUPS\tPOSTED")
	for _, r := range page.Releases {
		files := strconv.Itoa(r.FilesSeen)
		if r.FilesExpected > 0 {
			files += "/" + strconv.Itoa(r.FilesExpected)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%t\t%d\t%s\t%s\n", r.ID, printable(r.Name, 60), printable(r.Poster, 40), files,
			r.PartsSeen, r.PartsExpected, r.Complete, r.Bytes, printable(strings.Join(r.Groups, ","), 60), r.Posted.Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "next: %s\n", page.Next)
	return nil
}

func (m *Main) releasesBuildFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	once := fs.Bool("once", false, "read the feed to its end, then exit")
	fs.DurationVar(&m.Release.Window, "release-window", release.DefaultWindow, "how far apart in posting date a release's files may be")
	fs.DurationVar(&m.Release.Interval, "release-interval", release.DefaultInterval, "how often to read the feed once caught up")
	fs.Float64Var(&m.Release.Share, "release-share", release.DefaultShare, "the most of its time the builder spends writing while behind the feed (0.01 to 1; 1: no waits)")
	return func(ctx context.Context, pos []string) error {
		if err := noArgs("releases build", pos); err != nil {
			return err
		}
		store, err := m.open(ctx)
		if err != nil {
			return err
		}
		cfg := m.Release
		cfg.Store = store
		cfg.Logger = slog.New(slog.NewTextHandler(m.Stderr, nil))
		b, err := release.NewBuilder(cfg)
		if err != nil {
			return usagef("%v", err)
		}
		if !*once {
			if err := b.Run(ctx); !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		}
		n, err := b.Pass(ctx)
		if err != nil {
			return err
		}
		st := b.Stats()
		fmt.Fprintf(m.Stdout, "consumed %d items: %d releases created, %d files, %d items skipped\n", n, st.Created, st.Files, st.Skipped)
		return nil
	}
}

// printable makes s safe for a terminal table: control characters and tabs
// become "?", and it is cut at n runes.
func printable(s string, n int) string {
	out := []rune{}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			r = '?'
		}
		if len(out) == n {
			return string(out) + "…"
		}
		out = append(out, r)
	}
	return string(out)
}
