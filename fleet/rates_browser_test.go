package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

// TestDashboardRatesInBrowser: after three kept reads the dashboard shows,
// in headless Chromium, each coordinator's and each lane's articles/s with
// a sparkline of two steps, and the tail's lag with a line of three reads;
// a group named like markup stays text. The page is saved as a PNG
// (FLEET_READER_RATES_SCREENSHOT names where to keep a copy).
func TestDashboardRatesInBrowser(t *testing.T) {
	t.Parallel()
	bctx := browser(t)
	evil := `<img/src=x/onerror=document.title="pwned">`
	start := time.Now().UTC().Truncate(time.Second).Add(-30 * time.Second)
	read := func(sec int, hist, tail, calm, lag int64) *api.Fleet {
		at := start.Add(time.Duration(sec) * time.Second)
		f := fleetAt(at,
			group(1, evil, polled(lag), lane(lease.LaneHistory, hist), lane(lease.LaneTail, tail)),
			group(2, "alt.binaries.calm", nil, lane(lease.LaneHistory, calm)))
		f.Groups[0].Lanes[0].Holder, f.Groups[0].Lanes[1].Holder = "edge-1", "edge-2"
		f.Nodes = []api.FleetNode{{Name: "edge-1", LastSeen: at, Leases: []api.FleetLease{}}, {Name: "edge-2", LastSeen: at, Leases: []api.FleetLease{}}}
		f.Ranges = map[lease.State]int64{lease.StatePending: 12, lease.StateDone: 30}
		f.SpoolBytes = 3 << 20
		for i := range f.Groups {
			for j := range f.Groups[i].Lanes {
				f.Groups[i].Lanes[j].Next = 1000 + hist + tail
				f.Groups[i].Lanes[j].Ranges = map[lease.State]int64{lease.StatePending: 4, lease.StateDone: 10}
			}
		}
		return f
	}
	a := newScripted(t, read(0, 0, 0, 500, 5000), read(15, 1000, 300, 500, 4200), read(30, 2500, 900, 500, 3000))
	rd := startReader(t, readerOptions{urls: []string{a.URL}})
	rd.rates()
	rd.refresh()
	rd.refresh()
	require.Equal(t, 3, rd.rates().Rates.Reads)

	ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(rd.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`section.coordinator`)),
	))
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return s
	}
	// laneJS evaluates expr with `row` bound to the lane's row, found by
	// the group's name as text, never as a selector.
	name, err := json.Marshal(evil)
	require.NoError(t, err)
	laneJS := func(group []byte, lane, expr string) string {
		return `(() => { const row = [...document.querySelectorAll("tr.lane")].find(r => r.dataset.group === ` +
			string(group) + ` && r.dataset.lane === "` + lane + `"); return ` + expr + `; })()`
	}
	str := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		require.NoError(t, err, js)
		return s
	}
	num := func(js string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		require.NoError(t, err, js)
		return n
	}
	// points counts the points of a row's polylines, and its dots alone.
	points := `[...row.querySelectorAll(SEL + " svg.spark polyline")].reduce((n, p) => n + p.getAttribute("points").trim().split(/\s+/).length, 0)`
	with := func(sel, expr string) string { return `((SEL) => ` + expr + `)("` + sel + `")` }

	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	require.Equal(t, "edgeindex fleet", title, "no injected script ran")
	require.Zero(t, num(`document.querySelectorAll("img").length`), "the group name made no element")
	require.Contains(t, text(`#rates-note`), "last 3 kept reads (at most 60)")

	// The coordinator: (1000+300)/15 s, then (1500+600)/15 s.
	require.Equal(t, "140/s", text(`tr.host .rate-now`))
	require.Equal(t, "avg 113/s", text(`tr.host .rate-avg`))

	// The tail lane: 300/15 s then 600/15 s; its lag 5000, 4200, 3000.
	require.Equal(t, evil, str(laneJS(name, "tail", `row.querySelector(".group-name").firstChild.textContent.trim()`)))
	require.Equal(t, "40.0/s", str(laneJS(name, "tail", `row.querySelector(".rate-now").textContent`)))
	require.Equal(t, "2", str(laneJS(name, "tail", `row.querySelector(".rate svg.spark").dataset.points`)))
	require.Equal(t, 2, num(laneJS(name, "tail", with(".rate", points))))
	require.Equal(t, "3,000", str(laneJS(name, "tail", `row.querySelector(".lag-now").textContent`)))
	require.Equal(t, "3", str(laneJS(name, "tail", `row.querySelector(".lag svg.spark").dataset.points`)))
	require.Equal(t, 3, num(laneJS(name, "tail", with(".lag", points))))
	// The history lane: 1000/15 s then 1500/15 s; no lag.
	require.Equal(t, "100/s", str(laneJS(name, "history", `row.querySelector(".rate-now").textContent`)))
	require.Equal(t, 2, num(laneJS(name, "history", with(".rate", points))))
	require.Equal(t, "–", str(laneJS(name, "history", `row.querySelector(".lag-cell").textContent`)))
	// A lane that did nothing: 0/s, its line on the base line.
	calm := []byte(`"alt.binaries.calm"`)
	require.Equal(t, "0.00/s", str(laneJS(calm, "history", `row.querySelector(".rate-now").textContent`)))
	require.Equal(t, "21.5", str(laneJS(calm, "history", `row.querySelector(".rate circle.last").getAttribute("cy")`)))
	// Every lane of the page has its sparkline, drawn at its size.
	require.Equal(t, 3, num(`document.querySelectorAll("tr.lane .rate svg.spark").length`))
	require.Equal(t, 120, num(`Math.round(document.querySelector("tr.lane .rate svg.spark").getBoundingClientRect().width)`))

	// The wider tables still fit a 1280-pixel screen: nothing to scroll sideways.
	require.LessOrEqual(t, num(`document.documentElement.scrollWidth`), num(`document.documentElement.clientWidth`))

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG")
	path := filepath.Join(t.TempDir(), "dashboard-rates.png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	if keep := os.Getenv("FLEET_READER_RATES_SCREENSHOT"); keep != "" {
		require.NoError(t, os.WriteFile(keep, png, 0o644))
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}
