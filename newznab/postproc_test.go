package newznab_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/release"
)

// What post-processing found shows: the password, nfo, imdb attrs of a
// search's items, the NFO as t=details' description and on the details
// page, a lock and an NFO mark in the results, and password=0 hides a
// passworded release.
func TestPostProcShown(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		doc := w.release(t, "Ocean.Documentary.2024.1080p.WEB.x264-GRP")
		nfoText := "╔═╗ Title: <Ocean> & more\n"
		_, err := w.store.PostProcDue(t.Context(), time.Now(), time.Minute, 100)
		require.NoError(t, err)
		require.NoError(t, w.store.PostProcDone(t.Context(), doc.ID, "", release.PostProc{Password: 1, HasNFO: true, NFO: nfoText,
			IMDb: "tt1234567", TVDB: "81189", Bodies: 2}))

		api := func(q string) []newznab.RSSItem {
			res, err := http.Get(w.srv.URL + "/api?" + q + "&apikey=" + w.key)
			require.NoError(t, err)
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			return newznab.Decode[newznab.RSSDoc](t, body).Channel.Items
		}
		items := api("t=search&q=ocean")
		require.Len(t, items, 2)
		var passworded, plain int
		for _, it := range items {
			a := newznab.ItemAttrs(it)
			if a["guid"][0] == strconv.FormatInt(doc.ID, 10) {
				require.Equal(t, []string{"1"}, a["password"])
				require.Equal(t, []string{"1"}, a["nfo"])
				require.Equal(t, []string{"1234567"}, a["imdb"])
				require.Equal(t, []string{"81189"}, a["tvdbid"])
				require.Empty(t, it.Description, "a search sends no NFO")
				passworded++
			} else {
				require.Equal(t, []string{"0"}, a["password"])
				require.Equal(t, []string{"0"}, a["nfo"])
				plain++
			}
		}
		require.Equal(t, [2]int{1, 1}, [2]int{passworded, plain})
		items = api("t=search&q=ocean&password=0")
		require.Len(t, items, 1, "password=0 hides the passworded release")
		require.NotEqual(t, strconv.FormatInt(doc.ID, 10), newznab.ItemAttrs(items[0])["guid"][0])

		items = api("t=details&id=" + strconv.FormatInt(doc.ID, 10))
		require.Len(t, items, 1)
		require.Equal(t, nfoText, items[0].Description)

		code, body := w.get(t, "/details/"+strconv.FormatInt(doc.ID, 10), true)
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `<pre class="nfo" id="nfo">╔═╗ Title: &lt;Ocean&gt; &amp; more`+"\n</pre>")
		require.Contains(t, body, `<dd class="password">Passworded</dd>`)
		require.Contains(t, body, `<dd class="postproc">done</dd>`)
		code, body = w.get(t, "/?q=ocean", true)
		require.Equal(t, http.StatusOK, code)
		row := rowOf(t, body, doc.ID)
		require.Contains(t, row, `class="password"`)
		require.Contains(t, row, `class="nfo-flag"`)
		require.True(t, strings.Count(body, `class="password"`) == 1, "only the passworded row has a lock")
	})
}
