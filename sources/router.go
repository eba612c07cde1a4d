package sources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// Router is a ChunkSource over several providers' sources, one per named
// provider and at most one for the default provider (""). A group read from
// a named provider is stored as NEWSGROUP@PROVIDER (grouplease.ProviderGroup):
// the Router sends the calls for it to PROVIDER's source with the newsgroup
// alone, and the calls for a group without a provider to the default
// provider's source. A group of a provider it does not have fails with an
// error wrapping ErrNoSuchGroup that names the provider, so the planner and
// the prefetcher treat it as a group the source does not carry.
//
// It lives here, beside ChunkSource, rather than in a daemon, so that an
// embedder that wires its own sources routes groups the way serve does.
type Router struct {
	sources map[string]ChunkSource
	names   []string // sorted; "" first when there is a default
}

var (
	_ ChunkSource           = (*Router)(nil)
	_ grouplease.DateFinder = (*Router)(nil)
)

// NewRouter returns a Router over sources, by provider name: "" is the
// default provider, every other name must pass grouplease.CheckProvider.
// It needs at least one source and refuses a nil one.
func NewRouter(sources map[string]ChunkSource) (*Router, error) {
	if len(sources) == 0 {
		return nil, edgeindex.Invalidf("router: at least one source is required")
	}
	r := &Router{sources: make(map[string]ChunkSource, len(sources))}
	for name, src := range sources {
		if name != "" {
			if err := grouplease.CheckProvider(name); err != nil {
				return nil, fmt.Errorf("router: %w", err)
			}
		}
		if src == nil {
			return nil, edgeindex.Invalidf("router: provider %q has no source", name)
		}
		r.sources[name] = src
		r.names = append(r.names, name)
	}
	slices.Sort(r.names)
	return r, nil
}

// Providers returns the names of the providers, sorted ("" first for the
// default one).
func (r *Router) Providers() []string { return slices.Clone(r.names) }

// route returns the source of a stored group's provider and the newsgroup
// to ask it for.
func (r *Router) route(group string) (ChunkSource, string, error) {
	newsgroup, provider := grouplease.SplitGroup(group)
	src, ok := r.sources[provider]
	if !ok {
		if provider == "" {
			return nil, "", fmt.Errorf("group %q: no default provider (an unnamed --source) to read it from: %w", group, ErrNoSuchGroup)
		}
		return nil, "", fmt.Errorf("group %q: provider %q is not one of the sources: %w", group, provider, ErrNoSuchGroup)
	}
	return src, newsgroup, nil
}

// Fetch fetches the chunk from the group's provider.
func (r *Router) Fetch(ctx context.Context, group string, span lease.Span) ([]byte, error) {
	src, newsgroup, err := r.route(group)
	if err != nil {
		return nil, err
	}
	return src.Fetch(ctx, newsgroup, span)
}

// Watermarks reads the group's watermarks from its provider.
func (r *Router) Watermarks(ctx context.Context, group string) (low, high int64, err error) {
	src, newsgroup, err := r.route(group)
	if err != nil {
		return 0, 0, err
	}
	return src.Watermarks(ctx, newsgroup)
}

// FindDate asks the group's provider for the first article posted on or
// after since, when its source is a grouplease.DateFinder; otherwise it
// fails with an error wrapping errors.ErrUnsupported.
func (r *Router) FindDate(ctx context.Context, group string, since time.Time) (grouplease.DatePoint, error) {
	src, newsgroup, err := r.route(group)
	if err != nil {
		return grouplease.DatePoint{}, err
	}
	df, ok := src.(grouplease.DateFinder)
	if !ok {
		_, provider := grouplease.SplitGroup(group)
		return grouplease.DatePoint{}, fmt.Errorf("group %q: the source of provider %q cannot find dates: %w", group, provider, errors.ErrUnsupported)
	}
	return df.FindDate(ctx, newsgroup, since)
}

// ErrNoBodies means a group's source cannot read article bodies.
var ErrNoBodies = fmt.Errorf("the source reads no article bodies: %w", errors.ErrUnsupported)

// Body reads the body of article messageID from the sources that read
// bodies (nntp.Source does): the provider of group first, then the
// others in Providers' order, as a downloader with several servers does.
// Only an article a provider lacks (an error wrapping
// edgeindex.ErrNotFound) moves on to the next; any other error ends it.
// With no source that reads bodies it fails with an error wrapping
// ErrNoBodies.
func (r *Router) Body(ctx context.Context, group, messageID string) ([]byte, error) {
	_, first := grouplease.SplitGroup(group)
	order := []string{first}
	for _, name := range r.names {
		if name != first {
			order = append(order, name)
		}
	}
	var missing []error
	for _, name := range order {
		src, ok := r.sources[name].(interface {
			Body(context.Context, string) ([]byte, error)
		})
		if !ok {
			continue
		}
		b, err := src.Body(ctx, messageID)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, edgeindex.ErrNotFound) {
			return nil, fmt.Errorf("provider %q: %w", name, err)
		}
		missing = append(missing, fmt.Errorf("provider %q: %w", name, err))
	}
	if len(missing) == 0 {
		return nil, fmt.Errorf("group %q: %w", group, ErrNoBodies)
	}
	return nil, errors.Join(missing...)
}

// Check checks every source that has a Check method (nntp.Source dials and
// logs in), one after the other, and returns their errors joined, each
// naming its provider.
func (r *Router) Check(ctx context.Context) error {
	var errs []error
	for _, name := range r.names {
		if c, ok := r.sources[name].(interface{ Check(context.Context) error }); ok {
			if err := c.Check(ctx); err != nil {
				errs = append(errs, fmt.Errorf("provider %q: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Close closes every source that has a Close method and returns their
// errors joined.
func (r *Router) Close() error {
	var errs []error
	for _, name := range r.names {
		if c, ok := r.sources[name].(interface{ Close() error }); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("provider %q: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}
