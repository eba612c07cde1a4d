package coordinator_test

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// TestReleaseRoutes: releases built from the results feed are listed by
// cursor, read one by one, and served as NZB files with a safe name.
func TestReleaseRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), nil)
	ctx := t.Context()
	const group = "alt.binaries.routes"
	_, err := h.store.AddGroup(ctx, grouplease.Group{Name: group, RangeSize: 100, ChunkSize: 100})
	require.NoError(t, err)
	_, err = h.store.AddRanges(ctx, grouplease.NewRanges{Group: group, From: 1, To: 100})
	require.NoError(t, err)
	l, err := h.store.Grant(ctx, "worker", time.Minute)
	require.NoError(t, err)
	var items []batch.Item
	for i, name := range []string{`../../etc/passwd<&>".rar`, "second.nfo"} {
		b := usenet.Binary{Subject: fmt.Sprintf(`[%d/2] - "%s" yEnc`, i+1, name), Name: name, Poster: "Ann <ann@example.test>",
			Group: group, Date: "Sat, 04 May 2024 12:00:00 +0000", Total: 1, Complete: true,
			Parts: []usenet.Part{{N: 1, MessageID: fmt.Sprintf("<%d@x>", i), Bytes: 700}}}
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
