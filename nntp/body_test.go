package nntp_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/internal/yenctest"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/yenc"
)

// Body returns an article's body as sent, dot-unstuffed, "\n"-ended; an
// unknown message-id is ErrNoSuchArticle (edgeindex.ErrNotFound); one
// that could not be one argument is refused before anything is sent.
func TestBody(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Bodies: map[string]string{"<a@x>": "line one\n.starts with a dot\n..two dots\n\n"}})
	src := open(t, srv, nil)
	b, err := src.Body(ctxT(t), "<a@x>")
	require.NoError(t, err)
	require.Equal(t, "line one\n.starts with a dot\n..two dots\n\n", string(b))
	require.EqualValues(t, 1, src.Stats().Bodies)

	_, err = src.Body(ctxT(t), "<gone@x>")
	require.ErrorIs(t, err, nntp.ErrNoSuchArticle)
	require.ErrorIs(t, err, edgeindex.ErrNotFound)

	before := srv.Stats().Commands["BODY"]
	for _, id := range []string{"a@x", "<a@x> extra", "<a@x>\r\nQUIT", "<>", "<" + strings.Repeat("a", 300) + ">", "<a>b>"} {
		_, err := src.Body(ctxT(t), id)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "%q", id)
	}
	require.Equal(t, before, srv.Stats().Commands["BODY"], "no malformed message-id was sent")
}

// A 222 that names another article than the one asked is a protocol
// error: its body is not taken for the one asked.
func TestBodyOtherID(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Bodies: map[string]string{"<a@x>": "a\n"}, BodyOtherID: true})
	src := open(t, srv, nil)
	_, err := src.Body(ctxT(t), "<a@x>")
	require.ErrorIs(t, err, nntp.ErrProtocol)
	require.Contains(t, err.Error(), "<other@example.test>")
}

// A body past MaxBodyBytes ends with ErrTooLarge, the connection dropped
// (the server was still sending), and the next call works on a new one.
func TestBodyTooLarge(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Bodies: map[string]string{"<big@x>": "", "<a@x>": "ok\n"}, EndlessBody: true})
	src := open(t, srv, func(c *nntp.Config) { c.MaxBodyBytes = 100 << 10 })
	_, err := src.Body(ctxT(t), "<big@x>")
	require.ErrorIs(t, err, nntp.ErrTooLarge)
	require.Contains(t, err.Error(), "bytes read")
}

// At most BodyConns bodies are read at once, and header fetches go on
// beside them: a body held (in its Ready hook, a connection in hand)
// keeps a second body waiting, not a fetch.
func TestBodyShare(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Groups: oneGroup(nntptest.Lines(testGroup, 1, 100)),
		Bodies: map[string]string{"<a@x>": "a\n", "<b@x>": "b\n"}})
	src := open(t, srv, func(c *nntp.Config) { c.MaxConns, c.BodyConns = 4, 1 })
	held, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		ctx := sources.WithReady(ctxT(t), func() error { close(held); <-release; return nil })
		_, err := src.Body(ctx, "<a@x>")
		first <- err
	}()
	<-held
	second := make(chan error, 1)
	readied := make(chan struct{})
	go func() {
		ctx := sources.WithReady(ctxT(t), func() error { close(readied); return nil })
		_, err := src.Body(ctx, "<b@x>")
		second <- err
	}()
	_, err := src.Fetch(ctxT(t), testGroup, span(1, 50))
	require.NoError(t, err, "a header fetch beside a body")
	select {
	case <-readied:
		t.Fatal("a second body was read beside the first, past BodyConns 1")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-first)
	require.NoError(t, <-second)
}

// Against INN: the bodies of a yEnc post, read by message-id, decode to
// the file posted.
func TestBodyINN(t *testing.T) {
	t.Parallel()
	inn := inntest.Start(t)
	group := "alt.binaries.bodies"
	inn.NewGroup(t, group)
	data := make([]byte, 5000)
	for i := range data {
		data[i] = byte(i * 31)
	}
	parts := yenctest.Encode("file.bin", data, 2000, 128)
	var arts []inntest.Article
	for _, p := range parts {
		arts = append(arts, inntest.Article{MessageID: fmt.Sprintf("<body%d@example.test>", p.Number), From: "p <p@example.test>",
			Subject: fmt.Sprintf(`"file.bin" yEnc (%d/%d)`, p.Number, len(parts)), Newsgroups: group, Body: p.Body})
	}
	inn.Post(t, arts)
	src, err := nntp.New(nntp.Config{Addr: inn.Addr()})
	require.NoError(t, err)
	t.Cleanup(func() { src.Close() })
	var got []byte
	for _, a := range arts {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		b, err := src.Body(ctx, a.MessageID)
		cancel()
		require.NoError(t, err, a.MessageID)
		p, err := yenc.Decode(b, 1<<20)
		require.NoError(t, err, a.MessageID)
		got = append(got, p.Data...)
	}
	require.Equal(t, data, got)
	_, err = src.Body(t.Context(), "<never-posted@example.test>")
	require.True(t, errors.Is(err, nntp.ErrNoSuchArticle), "%v", err)
}
