package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

// TestReleaseCommands: releases build --once consumes the feed, releases
// list pages through what it built (table and JSON), nzb writes an NZB to
// stdout or a file, and bad arguments are usage errors.
func TestReleaseCommands(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	out, err := run(t, data, "releases")
	require.NoError(t, err)
	require.Contains(t, out, "ID  NAME")
	require.Contains(t, out, "next: \n")

	// Two binaries of one release, stored as a worker would.
	store, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(data, "edgeindex.db"), sqlstore.Config{})
	require.NoError(t, err)
	ctx := t.Context()
	_, err = store.AddGroup(ctx, grouplease.Group{Name: "alt.binaries.cmd", RangeSize: 100, ChunkSize: 10})
	require.NoError(t, err)
	_, err = store.AddRanges(ctx, grouplease.NewRanges{Group: "alt.binaries.cmd", From: 1, To: 100})
	require.NoError(t, err)
	l, err := store.Grant(ctx, "n", time.Minute)
	require.NoError(t, err)
	var items []batch.Item
	for i, name := range []string{"cmd.rel.part1.rar", "cmd.rel.part2.rar"} {
		b := usenet.Binary{Subject: fmt.Sprintf(`[%d/2] - "%s" yEnc`, i+1, name), Name: name, Poster: "p <p@x>",
			Group: "alt.binaries.cmd", Date: "Sat, 04 May 2024 12:00:00 +0000", Total: 1, Complete: true,
			Parts: []usenet.Part{{N: 1, Article: int64(i + 1), MessageID: fmt.Sprintf("<%d@x>", i), Bytes: 100}}}
		v, err := json.Marshal(b)
		require.NoError(t, err)
		items = append(items, batch.Item{Key: b.Key(), Value: v})
	}
	_, err = store.Put(ctx, l.Range.ID, lease.Fence{Node: "n", Token: l.Token}, batch.Batch{From: 1, To: 100, Items: items})
	require.NoError(t, err)
	require.NoError(t, store.Close())

	out, err = run(t, data, "releases", "build", "--once")
	require.NoError(t, err)
	require.Equal(t, "consumed 2 items: 1 releases created, 2 files, 0 items skipped\n", out)
	out, err = run(t, data, "releases", "build", "--once")
	require.NoError(t, err)
	require.Contains(t, out, "consumed 0 items")

	out, err = run(t, data, "releases", "list", "--group", "alt.binaries.cmd")
	require.NoError(t, err)
	require.Contains(t, out, "cmd.rel")
	require.Contains(t, out, "2/2")
	require.Contains(t, out, "next: 1\n")
	out, err = run(t, data, "releases", "--json", "--after", "1")
	require.NoError(t, err)
	var page release.Page
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Empty(t, page.Releases)
	require.Equal(t, "1", page.Next)

	out, err = run(t, data, "nzb", "1")
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal([]byte(out), new(struct{})))
	require.Contains(t, out, `<meta type="name">cmd.rel</meta>`)
	file := filepath.Join(t.TempDir(), "out.nzb")
	_, err = run(t, data, "nzb", "-o", file, "1")
	require.NoError(t, err)
	written, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, out, string(written))
	entries, err := os.ReadDir(filepath.Dir(file))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")

	_, err = run(t, data, "nzb", "2")
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	for _, args := range [][]string{{"nzb"}, {"nzb", "x"}, {"nzb", "0"}, {"nzb", "1", "2"}, {"releases", "what"}, {"releases", "--limit", "x"}} {
		_, err := run(t, data, args...)
		require.ErrorIs(t, err, errUsage, "%q", args)
		require.Equal(t, 2, exitCode(err))
	}
	_, err = run(t, data, "releases", "--limit", "5000")
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = run(t, data, "releases", "--group", "no.such")
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	require.True(t, strings.HasPrefix(out, "<?xml"))
}

// TestServeBuildsReleases: serve runs the release builder by default, and
// not with --releases=false.
func TestServeBuildsReleases(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("releases=%t", on), func(t *testing.T) {
			t.Parallel()
			data := t.TempDir()
			store, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(data, "edgeindex.db"), sqlstore.Config{})
			require.NoError(t, err)
			defer store.Close()
			ctx := t.Context()
			_, err = store.AddGroup(ctx, grouplease.Group{Name: "alt.binaries.serve", RangeSize: 100, ChunkSize: 10})
			require.NoError(t, err)
			_, err = store.AddRanges(ctx, grouplease.NewRanges{Group: "alt.binaries.serve", From: 1, To: 100})
			require.NoError(t, err)
			l, err := store.Grant(ctx, "n", time.Minute)
			require.NoError(t, err)
			b := usenet.Binary{Subject: `"serve.nfo" yEnc`, Name: "serve.nfo", Poster: "p", Group: "alt.binaries.serve", Total: 1,
				Complete: true, Parts: []usenet.Part{{N: 1, MessageID: "<s@x>", Bytes: 1}}}
			v, err := json.Marshal(b)
			require.NoError(t, err)
			_, err = store.Put(ctx, l.Range.ID, lease.Fence{Node: "n", Token: l.Token},
				batch.Batch{From: 1, To: 100, Items: []batch.Item{{Key: b.Key(), Value: v}}})
			require.NoError(t, err)

			sctx, cancel := context.WithCancel(ctx)
			m := NewMain(io.Discard, io.Discard)
			ready := make(chan string, 1)
			m.Ready = func(a string) { ready <- a }
			done := make(chan error, 1)
			go func() {
				done <- m.Run(sctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data, fmt.Sprintf("--releases=%t", on),
					"--release-interval", "10ms", "--release-window", "1h"})
			}()
			<-ready
			if on {
				require.Eventually(t, func() bool {
					cur, err := store.ReleaseCursor(ctx, release.DefaultConsumer)
					require.NoError(t, err)
					return cur.Items == 1
				}, 10*time.Second, 10*time.Millisecond, "serve's builder consumed the item")
			} else {
				time.Sleep(100 * time.Millisecond)
				cur, err := store.ReleaseCursor(ctx, release.DefaultConsumer)
				require.NoError(t, err)
				require.Zero(t, cur.Items, "no builder runs")
			}
			cancel()
			require.NoError(t, <-done)
		})
	}
}
