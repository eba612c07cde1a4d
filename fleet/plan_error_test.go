package fleet

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

// planErrorFleet is a fleet of two groups: the planner's last poll of the
// first failed at, with an error that reads like markup; the second's plan
// has no error.
func planErrorFleet(at time.Time) *api.Fleet {
	failed := &api.FleetPlan{Polled: true, PolledAt: t0.Add(-time.Hour), Error: `411 No such group <b>alt.binaries.typo</b>`, ErrorAt: &at}
	return fleetAt(t0.Add(3*time.Minute),
		group(1, "alt.binaries.typo", failed, lane(lease.LaneHistory, 0), lane(lease.LaneTail, 0)),
		group(2, "alt.binaries.fine", polled(10), lane(lease.LaneTail, 0)))
}

// TestDashboardPlanError: a group whose plan has an error shows it beside
// the group's name, once, as text, with when it happened; a group without
// one shows none.
func TestDashboardPlanError(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(-3 * time.Minute) // the reader's clock starts at time.Now
	a := newScripted(t, planErrorFleet(at))
	rd := startReader(t, readerOptions{urls: []string{a.URL}})

	r := rd.do("GET", "/")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	page := string(r.body)
	require.NotContains(t, page, "<b>alt.binaries.typo", "the error is escaped")
	require.Equal(t, 1, strings.Count(page, `class="plan-error warn"`), "once, beside the group's first lane")
	require.Contains(t, page, `planner failed 3m 0s ago: <span class="plan-error-text">411 No such group &lt;b&gt;alt.binaries.typo&lt;/b&gt;</span>`)
	require.Contains(t, page, "failed at "+formatTime(at))
	typo := page[strings.Index(page, `data-group="alt.binaries.typo" data-lane="history"`):]
	require.Less(t, strings.Index(typo, "plan-error"), strings.Index(typo, "</td>"), "in the group's name cell")
}

// TestDashboardPlanErrorInBrowser: in headless Chromium, the planner's
// error is visible beside its group, and only there.
func TestDashboardPlanErrorInBrowser(t *testing.T) {
	t.Parallel()
	bctx := browser(t)
	a := newScripted(t, planErrorFleet(time.Now().Add(-3*time.Minute)))
	rd := startReader(t, readerOptions{urls: []string{a.URL}})

	ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
	defer cancel()
	row := `tr.lane[data-group="alt.binaries.typo"][data-lane="history"]`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(rd.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(row+` .group-name .plan-error`)),
	))
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row+` .plan-error`)))
	require.NoError(t, err)
	require.Equal(t, "planner failed 3m 0s ago: 411 No such group <b>alt.binaries.typo</b>", text)
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".plan-error").length`))
	require.NoError(t, err)
	require.Equal(t, 1, n, "the tail lane's row and the other group show none")
	bold, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("b").length`))
	require.NoError(t, err)
	require.Zero(t, bold, "the error made no element")
	if path := os.Getenv("FLEET_READER_PLAN_ERROR_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, png, 0o644))
	}
}
