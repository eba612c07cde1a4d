package newznab_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

// buildReleases stores bins as a worker would (group gets one range of
// articles 1..span, granted to node, and one batch of every binary), then
// runs a release builder over the results feed until it has consumed
// them all. clk is the builder's clock; nil: the real one.
func buildReleases(t *testing.T, s *sqlstore.Store, clk clock.Clock, group, node string, span int64, bins []usenet.Binary) {
	t.Helper()
	ctx := t.Context()
	_, err := s.AddGroup(ctx, grouplease.Group{Name: group, RangeSize: span, ChunkSize: span / 10})
	require.NoError(t, err)
	_, err = s.AddRanges(ctx, grouplease.NewRanges{Group: group, From: 1, To: span})
	require.NoError(t, err)
	l, err := s.Grant(ctx, node, time.Minute)
	require.NoError(t, err)
	items := make([]batch.Item, 0, len(bins))
	for _, b := range bins {
		v, err := json.Marshal(b)
		require.NoError(t, err)
		items = append(items, batch.Item{Key: b.Key(), Value: v})
	}
	_, err = s.Put(ctx, l.Range.ID, lease.Fence{Node: l.Node, Token: l.Token}, batch.Batch{From: 1, To: span, Items: items})
	require.NoError(t, err)

	builder, err := release.NewBuilder(release.Config{Store: s, Clock: clk})
	require.NoError(t, err)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := builder.Pass(ctx)
		require.NoError(t, err)
		cur, err := s.ReleaseCursor(ctx, release.DefaultConsumer)
		require.NoError(t, err)
		if cur.Items >= int64(len(items)) {
			return
		}
		require.True(t, time.Now().Before(deadline), "the builder consumed %d of %d items", cur.Items, len(items))
		time.Sleep(5 * time.Millisecond)
	}
}
