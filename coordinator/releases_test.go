package coordinator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// buildReleases stores bins in group as a worker's one batch of a range
// of 100 articles, and builds their releases.
func buildReleases(t *testing.T, h *harness, group string, bins []usenet.Binary) {
	t.Helper()
	ctx := t.Context()
	_, err := h.store.AddGroup(ctx, grouplease.Group{Name: group, RangeSize: 100, ChunkSize: 100})
	require.NoError(t, err)
	_, err = h.store.AddRanges(ctx, grouplease.NewRanges{Group: group, From: 1, To: 100})
	require.NoError(t, err)
	l, err := h.store.Grant(ctx, "worker", time.Minute)
	require.NoError(t, err)
	var items []batch.Item
	for _, b := range bins {
		v, err := json.Marshal(b)
		require.NoError(t, err)
		items = append(items, batch.Item{Key: b.Key(), Value: v})
	}
	_, err = h.store.Put(ctx, l.Range.ID, lease.Fence{Node: "worker", Token: l.Token}, batch.Batch{From: 1, To: 100, Items: items})
	require.NoError(t, err)
	b, err := release.NewBuilder(release.Config{Store: h.store})
	require.NoError(t, err)
	_, err = b.Pass(ctx)
	require.NoError(t, err)
}

// TestReleaseRoutes: releases built from the results feed are listed by
// cursor, read one by one, and served as NZB files with a safe name.
func TestReleaseRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), nil)
	ctx := t.Context()
	const group = "alt.binaries.routes"
	var bins []usenet.Binary
	for i, name := range []string{`../../etc/passwd<&>".rar`, "second.nfo"} {
		bins = append(bins, usenet.Binary{Subject: fmt.Sprintf(`[%d/2] - "%s" yEnc`, i+1, name), Name: name, Poster: "Ann <ann@example.test>",
			Group: group, Date: "Sat, 04 May 2024 12:00:00 +0000", Total: 1, Complete: true,
			Parts: []usenet.Part{{N: 1, MessageID: fmt.Sprintf("<%d@x>", i), Bytes: 700}}})
	}
	buildReleases(t, h, group, bins)

	r := h.do("GET", "/v1/releases?group="+group, adminToken, 0, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var page release.Page
	require.NoError(t, json.Unmarshal(r.body, &page))
	require.Len(t, page.Releases, 2)
	next := h.do("GET", "/v1/releases?after="+page.Next, adminToken, 0, nil)
	require.Equal(t, http.StatusOK, next.status)
	var rest release.Page
	require.NoError(t, json.Unmarshal(next.body, &rest))
	require.Empty(t, rest.Releases, "nothing after the last page")
	require.Equal(t, page.Next, rest.Next)

	id := page.Releases[0].ID
	r = h.do("GET", fmt.Sprintf("/v1/releases/%d", id), adminToken, 0, nil)
	require.Equal(t, http.StatusOK, r.status)
	var rel release.Release
	require.NoError(t, json.Unmarshal(r.body, &rel))
	require.Len(t, rel.Files, 1)

	r = h.do("GET", fmt.Sprintf("/v1/releases/%d/nzb", id), adminToken, 0, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, nzb.ContentType, r.header.Get("Content-Type"))
	cd := r.header.Get("Content-Disposition")
	require.Contains(t, cd, "attachment")
	require.NotContains(t, cd, "/", "a hostile name is made safe: %s", cd)
	require.NotContains(t, cd, "..")
	var doc struct {
		Files []struct {
			Segments []string `xml:"segments>segment"`
		} `xml:"file"`
	}
	require.NoError(t, xml.Unmarshal(r.body, &doc), "%s", r.body)
	require.Equal(t, []string{"0@x"}, doc.Files[0].Segments)
	full, err := h.store.ReleaseByID(ctx, id)
	require.NoError(t, err)
	var whole bytes.Buffer
	require.NoError(t, nzb.Write(&whole, full))
	require.Equal(t, whole.String(), string(r.body), "streamed, the NZB is what Write makes of the whole release")

	for _, c := range []struct {
		path   string
		token  string
		status int
	}{
		{"/v1/releases", "", http.StatusUnauthorized},
		{"/v1/releases", h.token, http.StatusForbidden},
		{"/v1/releases/999999", adminToken, http.StatusNotFound},
		{"/v1/releases/999999/nzb", adminToken, http.StatusNotFound},
		{"/v1/releases/x", adminToken, http.StatusBadRequest},
		{"/v1/releases?after=garbage", adminToken, http.StatusBadRequest},
		{"/v1/releases?limit=0", adminToken, http.StatusBadRequest},
		{"/v1/releases?group=nope", adminToken, http.StatusNotFound},
	} {
		r := h.do("GET", c.path, c.token, 0, nil)
		require.Equal(t, c.status, r.status, "%s: %s", c.path, r.body)
	}
}

// cutFiles is a store whose ReleaseFiles fails after the first file.
type cutFiles struct{ coordinator.Store }

var errCut = errors.New("the store went away")

func (s cutFiles) ReleaseFiles(ctx context.Context, id int64, each func(release.File) error) error {
	err := s.Store.ReleaseFiles(ctx, id, func(f release.File) error {
		if err := each(f); err != nil {
			return err
		}
		return errCut
	})
	if errors.Is(err, errCut) {
		return err
	}
	return errors.Join(err, errors.New("the release had no file"))
}

// TestReleaseNZBCut: an admin NZB that fails once it began is cut (the
// body ends without its end), never a whole-looking shorter NZB.
func TestReleaseNZBCut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), func(c *coordinator.Config) { c.Store = cutFiles{c.Store} })
	ctx := t.Context()
	const group = "alt.binaries.cut"
	buildReleases(t, h, group, []usenet.Binary{{Subject: `[1/1] - "cut.rar" yEnc`, Name: "cut.rar", Poster: "Ann <ann@example.test>",
		Group: group, Date: "Sat, 04 May 2024 12:00:00 +0000", Total: 1, Complete: true,
		Parts: []usenet.Part{{N: 1, MessageID: "<c@x>", Bytes: 700}}}})
	page, err := h.store.Releases(ctx, release.Query{Group: group, Limit: 1})
	require.NoError(t, err)
	require.Len(t, page.Releases, 1)

	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v1/releases/%d/nzb", h.http.URL, page.Releases[0].ID), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "the answer began")
	body, err := io.ReadAll(res.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the NZB is cut, not ended")
	require.NotContains(t, string(body), "</nzb>")
}
