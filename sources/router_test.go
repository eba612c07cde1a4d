package sources_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sources"
)

// recorder is a source that records the groups it was asked for, and
// answers with its name.
type recorder struct {
	name string

	mu     sync.Mutex
	groups []string
	closed bool
	check  error
}

func (r *recorder) record(group string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.groups = append(r.groups, group)
}

func (r *recorder) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.groups...)
}

func (r *recorder) Fetch(_ context.Context, group string, _ lease.Span) ([]byte, error) {
	r.record(group)
	return []byte(r.name), nil
}

func (r *recorder) Watermarks(_ context.Context, group string) (int64, int64, error) {
	r.record(group)
	return 1, int64(len(r.name)), nil
}

func (r *recorder) Check(context.Context) error { return r.check }

func (r *recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

// dater is a recorder that can find dates.
type dater struct{ *recorder }

func (d dater) FindDate(_ context.Context, group string, since time.Time) (grouplease.DatePoint, error) {
	d.record(group)
	return grouplease.DatePoint{Article: 42, Date: since, Calls: 3}, nil
}

func TestProvidersRouterSendsEachGroupToItsProvider(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	def, eweka, news2 := &recorder{name: "default"}, &recorder{name: "eweka"}, &recorder{name: "news2"}
	r, err := sources.NewRouter(map[string]sources.ChunkSource{"": def, "eweka": eweka, "news2": dater{news2}})
	require.NoError(t, err)
	require.Equal(t, []string{"", "eweka", "news2"}, r.Providers())

	span := lease.Span{From: 1, To: 10}
	for group, want := range map[string]string{
		"alt.binaries.x": "default",
		grouplease.ProviderGroup("alt.binaries.x", "eweka"): "eweka",
		grouplease.ProviderGroup("alt.binaries.y", "news2"): "news2",
	} {
		b, err := r.Fetch(ctx, group, span)
		require.NoError(t, err, group)
		require.Equal(t, want, string(b), group)
		_, high, err := r.Watermarks(ctx, group)
		require.NoError(t, err, group)
		require.Equal(t, int64(len(want)), high, group)
	}
	// Each provider's source is asked for the newsgroup alone.
	require.Equal(t, []string{"alt.binaries.x", "alt.binaries.x"}, def.asked())
	require.Equal(t, []string{"alt.binaries.x", "alt.binaries.x"}, eweka.asked())
	require.Equal(t, []string{"alt.binaries.y", "alt.binaries.y"}, news2.asked())

	// A provider the router does not have: the source does not carry the
	// group, and the error names the provider.
	_, err = r.Fetch(ctx, "alt.binaries.x@usenetexpress", span)
	require.ErrorIs(t, err, sources.ErrNoSuchGroup)
	require.ErrorContains(t, err, `"usenetexpress"`)
	_, _, err = r.Watermarks(ctx, "alt.binaries.x@usenetexpress")
	require.ErrorIs(t, err, sources.ErrNoSuchGroup)
	_, err = r.FindDate(ctx, "alt.binaries.x@usenetexpress", time.Now())
	require.ErrorIs(t, err, sources.ErrNoSuchGroup)
	require.Len(t, def.asked(), 2, "an unknown provider is never sent to the default one")

	// FindDate goes to the provider's source when it can find dates.
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, err := r.FindDate(ctx, "alt.binaries.y@news2", since)
	require.NoError(t, err)
	require.Equal(t, grouplease.DatePoint{Article: 42, Date: since, Calls: 3}, p)
	require.Equal(t, "alt.binaries.y", news2.asked()[2])
	_, err = r.FindDate(ctx, "alt.binaries.x@eweka", since)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.ErrorContains(t, err, `"eweka"`)

	// Check and Close reach every source, and name the provider that failed.
	eweka.check = errors.New("481 authentication failed")
	err = r.Check(ctx)
	require.ErrorContains(t, err, `provider "eweka": 481 authentication failed`)
	require.NotContains(t, err.Error(), "news2")
	require.NoError(t, r.Close())
	require.True(t, def.closed && eweka.closed && news2.closed)
}

func TestProvidersRouterWithoutDefaultRefusesUnnamedGroups(t *testing.T) {
	t.Parallel()
	r, err := sources.NewRouter(map[string]sources.ChunkSource{"a": &recorder{name: "a"}})
	require.NoError(t, err)
	_, err = r.Fetch(t.Context(), "alt.binaries.x", lease.Span{From: 1, To: 1})
	require.ErrorIs(t, err, sources.ErrNoSuchGroup)
	require.ErrorContains(t, err, "no default provider")
}

func TestProvidersRouterRefusesBadProviders(t *testing.T) {
	t.Parallel()
	for name, srcs := range map[string]map[string]sources.ChunkSource{
		"none":      {},
		"upper":     {"Eweka": &recorder{}},
		"separator": {"a@b": &recorder{}},
		"nil":       {"a": nil},
	} {
		_, err := sources.NewRouter(srcs)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, name)
	}
}

// Two providers, each its own source: the group a provider's copy of a
// newsgroup is stored as names where it is read from.
func ExampleRouter() {
	eweka := sources.Funcs{WatermarksFunc: func(_ context.Context, group string) (int64, int64, error) {
		fmt.Println("eweka asked for", group)
		return 1, 1000, nil
	}}
	news2 := sources.Funcs{WatermarksFunc: func(_ context.Context, group string) (int64, int64, error) {
		fmt.Println("news2 asked for", group)
		return 500, 700, nil
	}}
	r, err := sources.NewRouter(map[string]sources.ChunkSource{"eweka": eweka, "news2": news2})
	if err != nil {
		log.Fatal(err)
	}
	for _, provider := range []string{"eweka", "news2"} {
		group := grouplease.ProviderGroup("alt.binaries.example", provider)
		low, high, err := r.Watermarks(context.Background(), group)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(group, low, high)
	}
	// Output:
	// eweka asked for alt.binaries.example
	// alt.binaries.example@eweka 1 1000
	// news2 asked for alt.binaries.example
	// alt.binaries.example@news2 500 700
}

// bodies is a recorder that reads the bodies it holds; any other is
// not found.
type bodies struct {
	*recorder
	held map[string]string
	err  error
}

func (b bodies) Body(_ context.Context, id string) ([]byte, error) {
	b.record(id)
	if b.err != nil {
		return nil, b.err
	}
	if v, ok := b.held[id]; ok {
		return []byte(v), nil
	}
	return nil, fmt.Errorf("no %s: %w", id, edgeindex.ErrNotFound)
}

// Body asks the group's provider first, then the others; only an
// article one lacks moves on, and a source that reads no bodies is
// passed over.
func TestRouterBody(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	def := bodies{recorder: &recorder{name: "default"}, held: map[string]string{"<a@x>": "from default"}}
	eweka := bodies{recorder: &recorder{name: "eweka"}, held: map[string]string{"<b@x>": "from eweka"}}
	r, err := sources.NewRouter(map[string]sources.ChunkSource{"": def, "eweka": eweka, "synthetic": &recorder{name: "s"}})
	require.NoError(t, err)

	b, err := r.Body(ctx, "alt.binaries.x", "<b@x>")
	require.NoError(t, err)
	require.Equal(t, "from eweka", string(b), "the default lacks it: the next has it")
	b, err = r.Body(ctx, "alt.binaries.x@eweka", "<a@x>")
	require.NoError(t, err)
	require.Equal(t, "from default", string(b))
	require.Equal(t, []string{"<b@x>", "<a@x>"}, eweka.asked(), "eweka first for its group")

	_, err = r.Body(ctx, "alt.binaries.x", "<c@x>")
	require.ErrorIs(t, err, edgeindex.ErrNotFound, "none has it")

	broken := bodies{recorder: &recorder{name: "broken"}, err: errors.New("connection reset")}
	r, err = sources.NewRouter(map[string]sources.ChunkSource{"": broken, "eweka": eweka})
	require.NoError(t, err)
	_, err = r.Body(ctx, "alt.binaries.x", "<b@x>")
	require.ErrorContains(t, err, "connection reset", "another error ends it: the try is retried")

	r, err = sources.NewRouter(map[string]sources.ChunkSource{"": &recorder{name: "s"}})
	require.NoError(t, err)
	_, err = r.Body(ctx, "alt.binaries.x", "<a@x>")
	require.ErrorIs(t, err, sources.ErrNoBodies)
}
