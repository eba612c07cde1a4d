package fleet

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/fleet/fleettest"
	"github.com/edgeindex/edgeindex/internal/browsertest"
)

// browser starts headless Chromium for the test (browsertest.Start).
func browser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.Start(t, 1280, 1000)
}

func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	bctx := browser(t)
	a := fleettest.NewCoordinator(t)
	evil := `<img/src=x/onerror=document.title="pwned">`
	a.Populate(evil, "alt.ordered.a")
	rd := startReader(t, readerOptions{urls: []string{a.URL}})

	ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(rd.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`section.coordinator`)),
	))
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return s
	}
	attr := func(sel, name string) string {
		t.Helper()
		r, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
		require.NoError(t, err, sel)
		require.True(t, r.Exists, "%s has no %s", sel, name)
		return r.Value
	}

	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	require.Equal(t, "edgeindex fleet", title, "no injected script ran")
	require.Equal(t, "edge-1", text(`.node[data-node="edge-1"] .node-name`))
	require.Equal(t, "ok", text(`tr.host .host-status`))

	// The lease's progress bar: 25 of the range's 100 articles.
	require.Equal(t, "25", attr(`tr.lease progress.lease-progress`, "value"))
	require.Equal(t, "100", attr(`tr.lease progress.lease-progress`, "max"))
	position, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector("tr.lease progress").position`))
	require.NoError(t, err)
	require.InDelta(t, 0.25, position, 1e-9)
	require.Equal(t, "25.0%", text(`tr.lease .pct`))
	require.Equal(t, evil, text(`tr.lease .group`), "the group name is shown as text")
	images, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("img").length`))
	require.NoError(t, err)
	require.Zero(t, images, "the group name made no element")

	// The ordered group's lane.
	lane := `tr.lane[data-group="alt.ordered.a"]`
	require.Equal(t, "history", text(lane+` .lane-name`))
	require.Equal(t, "edge-2", text(lane+` .holder`))
	require.Equal(t, "1", text(lane+` .lane-next`))
	require.Equal(t, "none", text(lane+` .snapshot-next`))
	require.Contains(t, text(lane+` .counts`), "pending 3")

	fresh, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("stale-badge") === null`))
	require.NoError(t, err)
	require.True(t, fresh)
	require.Contains(t, text(`#fresh-badge`), "current")

	// Past --keep the read is stale: the badge says so, with its age.
	rd.clock.Advance(42 * time.Second)
	release := a.Hold() // the refresh waits, so the page shows the stale read
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(rd.url+"/"),
		chromedp.WaitVisible(chromedp.ID(`stale-badge`)),
	))
	require.Equal(t, "stale · 42s old", text(`#stale-badge`))
	require.Equal(t, "edge-1", text(`.node[data-node="edge-1"] .node-name`))
	if path := os.Getenv("FLEET_READER_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, png, 0o644))
	}
	release()
	require.NoError(t, rd.m.fleet.Wait(t.Context()))
}
