package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/syncbuf"
	"github.com/edgeindex/edgeindex/newznab"
)

// user add prints the new key alone on the last line; the key works
// against serve --newznab until its user is suspended or removed; bad
// command lines are usage errors that change nothing.
func TestUserCommands(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	out, err := run(t, data, "user", "add", "alice", "--requests", "3", "--grabs", "1")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	require.Regexp(t, `^[0-9a-f]{32}$`, key, "the last line is the key alone")

	for _, args := range [][]string{
		{"user"}, {"user", "add"}, {"user", "list", "x"}, {"user", "add", "bob", "--requests", "-1"},
		{"user", "add", "a", "b"}, {"user", "frob", "alice"},
	} {
		_, err := run(t, data, args...)
		require.ErrorIs(t, err, errUsage, "%q", args)
	}
	_, err = run(t, data, "user", "add", "alice")
	require.Error(t, err, "a name is added once")
	_, err = run(t, data, "user", "add", "bad name")
	require.Error(t, err)

	list, err := run(t, data, "user", "list", "--json")
	require.NoError(t, err)
	var accounts []newznab.Account
	require.NoError(t, json.Unmarshal([]byte(list), &accounts))
	require.Len(t, accounts, 1, "the refused adds added nothing")
	require.Equal(t, "alice", accounts[0].Name)
	require.Equal(t, int64(3), accounts[0].RequestLimit)
	require.Equal(t, int64(1), accounts[0].GrabLimit)

	nz := make(chan string, 1)
	s := startServeWith(t, data, func(m *Main) { m.NewznabReady = func(a string) { nz <- a } }, "--newznab", "127.0.0.1:0")
	base := "http://" + <-nz
	api := func(q string) string {
		t.Helper()
		resp, err := http.Get(base + "/api?" + q)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Contains(t, resp.Header.Get("Content-Type"), "xml", "every answer is XML: %s", b)
		return string(b)
	}
	require.Contains(t, api("t=caps"), "<caps>", "caps needs no key")
	require.Contains(t, api("t=search&apikey="+key), `<newznab:response offset="0" total="0"/>`)
	require.Contains(t, api("t=search&apikey=0123456789abcdef0123456789abcdef"), `code="100"`)

	_, err = run(t, data, "user", "suspend", "alice")
	require.NoError(t, err)
	require.Contains(t, api("t=search&apikey="+key), `code="101"`)
	_, err = run(t, data, "user", "resume", "alice")
	require.NoError(t, err)
	require.Contains(t, api("t=search&apikey="+key), `apicurrent="2"`)
	require.Contains(t, api("t=search&apikey="+key), `apicurrent="3"`)
	require.Contains(t, api("t=search&apikey="+key), `Request limit reached`)

	list, err = run(t, data, "user", "list")
	require.NoError(t, err)
	require.Regexp(t, `alice\s+3/3\s+0/1\s+false`, list)
	_, err = run(t, data, "user", "rm", "alice")
	require.NoError(t, err)
	require.Contains(t, api("t=search&apikey="+key), `code="100"`)
	_, err = run(t, data, "user", "rm", "alice")
	require.Error(t, err)
	s.stop(t)

	_, err = run(t, data, "serve", "--newznab", "127.0.0.1:0", "--min-completion", "0")
	require.ErrorIs(t, err, errUsage)
}

// demo --serve builds releases from the synthetic group and stays up
// with the API and the search page on the URL and key it prints, until
// interrupted.
func TestDemoServe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	out := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- NewMain(out, io.Discard).Run(ctx, []string{"demo", "--articles", "20000", "--range-size", "5000", "--serve", "--newznab", "127.0.0.1:0"})
	}()
	var page string
	require.Eventually(t, func() bool {
		_, rest, ok := strings.Cut(out.String(), "search page: ")
		page, _, _ = strings.Cut(rest, "\n")
		return ok && strings.Contains(rest, "serving until interrupted")
	}, 2*time.Minute, 20*time.Millisecond, "demo never printed its URL: %s", out)
	require.Contains(t, out.String(), "built 20 releases (20 complete)", "one synthetic release per 1000 articles")

	get := func(url string) string {
		t.Helper()
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		return string(b)
	}
	require.Contains(t, get(page), "1–20 of 20 releases", "the printed URL opens the search page with the key")
	base, key, ok := strings.Cut(page, "/?apikey=")
	require.True(t, ok, page)
	feed := get(base + "/api?t=search&apikey=" + key)
	require.Contains(t, feed, `<newznab:response offset="0" total="20"/>`)
	require.Contains(t, feed, `<newznab:attr name="category" value="2000"/>`, "the synthetic movies are categorized")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("demo --serve did not stop when interrupted")
	}
}
