// Package browsertest starts headless Chromium for the tests that drive a
// real browser (the fleet reader's dashboard, the search page).
package browsertest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// ChromiumPath is where Debian's chromium package puts the browser.
const ChromiumPath = "/usr/bin/chromium"

// Start starts headless Chromium with a window of width × height for the
// test and returns a context whose tab it drives; the browser exits when
// the test ends. Without Chromium the test skips, unless
// EDGEINDEX_REQUIRE_BROWSER=1, which makes it fail.
func Start(t *testing.T, width, height int) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		if os.Getenv("EDGEINDEX_REQUIRE_BROWSER") == "1" {
			t.Fatalf("EDGEINDEX_REQUIRE_BROWSER=1 and there is no browser: %v (apt-get install -y chromium)", err)
		}
		t.Skipf("no browser at %s (apt-get install -y chromium, or set EDGEINDEX_REQUIRE_BROWSER=1 to fail): %v", ChromiumPath, err)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(ChromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("window-size", fmt.Sprintf("%d,%d", width, height)),
		chromedp.UserDataDir(t.TempDir()),
	)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser to exit
	})
	// The first Run starts the browser; it lives as long as ctx.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	return ctx
}
