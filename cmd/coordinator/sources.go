package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/redact"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/postproc"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/sources"
)

// sourceFlags collects serve's repeated --source flags.
type sourceFlags []string

func (f *sourceFlags) String() string { return "" } // the default, synthetic, is in the usage

func (f *sourceFlags) Set(v string) error {
	*f = append(*f, v)
	return nil
}

// chunkSource is a source, how many fetches it takes at once (0: the
// prefetcher's default), and what closes it.
type chunkSource struct {
	sources.ChunkSource
	conns int
	close func() error
	// nntp are the NNTP sources among the providers, whose fetch stats
	// the metrics watch.
	nntp []*nntp.Source
}

// fetchStats returns the fetch stats of the NNTP sources together: the
// fetches in flight and the cut ones summed, the oldest of the oldest.
func (s chunkSource) fetchStats() coordinator.FetchStats {
	var out coordinator.FetchStats
	for _, ns := range s.nntp {
		st := ns.Stats()
		out.InFlight += st.InFlight
		out.Oldest = max(out.Oldest, st.Oldest)
		out.CutDeadline += st.CutDeadline
		out.CutTooLarge += st.CutTooLarge
	}
	return out
}

// bodies is what post-processing reads article bodies through: the
// router, or the one NNTP source; nil when no source reads bodies.
func (s chunkSource) bodies() postproc.Bodies {
	switch src := s.ChunkSource.(type) {
	case *sources.Router:
		if len(s.nntp) > 0 {
			return src
		}
	case *nntp.Source:
		return bodyFunc(func(ctx context.Context, _, messageID string) ([]byte, error) { return src.Body(ctx, messageID) })
	}
	return nil
}

// bodyFunc is a func as postproc.Bodies.
type bodyFunc func(ctx context.Context, group, messageID string) ([]byte, error)

func (f bodyFunc) Body(ctx context.Context, group, messageID string) ([]byte, error) {
	return f(ctx, group, messageID)
}

// provider is one --source: the provider's name ("" for the default one)
// and where its chunks come from.
type provider struct {
	name, raw string
}

// label names the flag in errors, without the URL's password.
func (p provider) label() string {
	if p.name == "" {
		return "--source " + redact.URL(p.raw)
	}
	return "--source " + p.name + "=" + redact.URL(p.raw)
}

// parseSources parses the --source flags: NAME=URL for a named provider,
// URL alone for the default one (at most one). No flag is the synthetic
// source as the default provider.
func parseSources(raws []string) ([]provider, error) {
	if len(raws) == 0 {
		return []provider{{raw: "synthetic"}}, nil
	}
	seen := map[string]bool{}
	var out []provider
	for _, raw := range raws {
		p := provider{raw: raw}
		// The name stands before an "=" that comes before any "://": a
		// URL's own "=" are in its query.
		if i := strings.Index(raw, "="); i >= 0 && (!strings.Contains(raw, "://") || i < strings.Index(raw, "://")) {
			p.name, p.raw = raw[:i], raw[i+1:]
			if err := grouplease.CheckProvider(p.name); err != nil {
				return nil, usagef("--source %s=...: %v", p.name, err)
			}
		}
		if seen[p.name] {
			if p.name == "" {
				return nil, usagef("--source: one unnamed source at most (the default provider); name the others, --source NAME=URL")
			}
			return nil, usagef("--source %s=...: provider %q is named twice", p.name, p.name)
		}
		seen[p.name] = true
		out = append(out, p)
	}
	return out, nil
}

// budgetFunc returns the connection budget of a provider ("" for the
// default one) whose account allows conns connections in all.
type budgetFunc func(provider string, conns int) (nntp.Budget, error)

// sources returns the chunk sources --source names: one per provider, the
// default provider's alone as it is, several (or a named one) behind a
// sources.Router that sends each group to its provider's. Each NNTP
// provider gets its own nntp.Source with its own connections: the URL's
// conns, else --nntp-conns, else the nntp package's default. When budget
// is not nil, each NNTP provider's connections are bounded by the budget
// it returns for the provider and that count, too.
//
// Each NNTP source is dialled and logged in to once, so a bad URL, a
// refused login or an unreachable server stops the daemon at start with
// one sentence that names the provider.
func (m *Main) sources(ctx context.Context, budget budgetFunc) (_ chunkSource, err error) {
	provs, err := parseSources(m.Sources)
	if err != nil {
		return chunkSource{}, err
	}
	if m.NNTPConns < 0 {
		return chunkSource{}, usagef("--nntp-conns %d: at least 1", m.NNTPConns)
	}
	var out chunkSource
	var closers []func() error
	closeAll := func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	byName := make(map[string]sources.ChunkSource, len(provs))
	for _, p := range provs {
		src, ns, err := m.openSource(ctx, p, budget)
		if err != nil {
			return chunkSource{}, err
		}
		byName[p.name] = src
		if ns == nil {
			continue
		}
		closers = append(closers, ns.Close)
		out.nntp = append(out.nntp, ns)
		out.conns += ns.MaxConns()
	}
	out.close = closeAll
	if len(provs) == 1 && provs[0].name == "" {
		out.ChunkSource = byName[""]
		return out, nil
	}
	if len(out.nntp) < len(provs) {
		// A synthetic provider fetches at the prefetcher's default pace.
		out.conns += prefetch.DefaultConcurrency * (len(provs) - len(out.nntp))
	}
	r, err := sources.NewRouter(byName)
	if err != nil {
		return chunkSource{}, usagef("--source: %v", err)
	}
	out.ChunkSource = r
	return out, nil
}

// openSource opens one provider's source: the synthetic one, or an NNTP
// source that it checks (nil for the synthetic one).
func (m *Main) openSource(ctx context.Context, p provider, budget budgetFunc) (sources.ChunkSource, *nntp.Source, error) {
	switch {
	case p.raw == "" || p.raw == "synthetic":
		src, err := sources.NewSynthetic(sources.SyntheticConfig{})
		return src, nil, err
	case strings.HasPrefix(p.raw, "nntp://"), strings.HasPrefix(p.raw, "nntps://"):
	default:
		return nil, nil, usagef("%s: synthetic or nntp://[user:pass@]host:port or nntps://[user:pass@]host:port (TLS), named NAME=URL when there are several", p.label())
	}
	cfg, err := nntp.ParseURL(p.raw)
	if err != nil {
		return nil, nil, usagef("%s: %v", p.label(), err)
	}
	if cfg.MaxConns == 0 && m.NNTPConns > 0 {
		cfg.MaxConns = m.NNTPConns
	}
	if m.BodyConns > 0 {
		cfg.BodyConns = min(m.BodyConns, cmp.Or(cfg.MaxConns, nntp.DefaultMaxConns))
	}
	if budget != nil {
		if cfg.Budget, err = budget(p.name, cmp.Or(cfg.MaxConns, nntp.DefaultMaxConns)); err != nil {
			return nil, nil, fmt.Errorf("%s: connection budget: %w", p.label(), err)
		}
	}
	src, err := nntp.New(cfg)
	if err != nil {
		return nil, nil, usagef("%s: %v", p.label(), err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := src.Check(cctx); err != nil {
		src.Close()
		return nil, nil, fmt.Errorf("%s: %w", p.label(), err)
	}
	return src, src, nil
}

// providerFlag adds --provider, for the commands that take a group.
func providerFlag(fs *flag.FlagSet) *string {
	return fs.String("provider", "", "the provider the group is read from: a name serve's --source NAME=URL gives (default: the unnamed source)")
}

// groupName returns the stored name of a command line's group: NAME read
// from --provider's provider is NAME@PROVIDER (grouplease.ProviderGroup).
// The stored form NAME@PROVIDER, as status shows it, is accepted too, but
// not with --provider as well. Either way the stored name must pass
// grouplease.CheckGroupName, as the store checks it too: this says so
// as a usage error, before the store is opened.
func groupName(name, provider string) (string, error) {
	stored := name
	if provider != "" {
		if strings.Contains(name, "@") {
			return "", usagef("group %q already names its provider: NAME@PROVIDER or NAME --provider PROVIDER, not both", name)
		}
		if err := grouplease.CheckProvider(provider); err != nil {
			return "", usagef("--provider: %v", err)
		}
		stored = grouplease.ProviderGroup(name, provider)
	}
	if err := grouplease.CheckGroupName(stored); err != nil {
		return "", usagef("%v", err)
	}
	return stored, nil
}

// addSourceFlags adds --source and --nntp-conns: serve's, and group add's
// and plan's, which check the group on its provider.
func (m *Main) addSourceFlags(fs *flag.FlagSet) {
	fs.Var(&m.Sources, "source", "the `[NAME=]URL` chunks come from: synthetic, or nntp://[user:pass@]host:port or nntps://[user:pass@]host:port (TLS) "+
		"(default synthetic); repeat it as NAME=URL for several providers, one of them unnamed at most")
	fs.IntVar(&m.NNTPConns, "nntp-conns", 0, "the NNTP account's connections in all, shared by the coordinators on one database, "+
		"for each --source URL without ?conns=N (a URL's conns wins over this flag; default 4)")
}

// groupArg returns the stored name of the group that is cmd's one
// argument, read from provider (see groupName).
func groupArg(cmd, what string, pos []string, provider string) (string, error) {
	name, err := oneArg(cmd, what, pos)
	if err != nil {
		return "", err
	}
	return groupName(name, provider)
}
