package inntest_test

import (
	"context"
	"fmt"
	"net"
	"net/textproto"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
)

// BenchmarkINNOneArticle fetches one-article spans from INN, the size of
// a repair chunk: the nntp Source against the raw way, a plain textproto
// connection that sends OVER and reads the block. nnrpd writes the status
// line and the block separately with Nagle on, so a reader that delays its
// ACKs waits up to 40 ms for each reply; the Source asks for quick ACKs.
//
//	go test -run '^$' -bench INNOneArticle ./internal/inntest/
func BenchmarkINNOneArticle(b *testing.B) {
	s := inntest.Start(b)
	s.NewGroup(b, "alt.bench")
	s.Post(b, inntest.Generate(200, "alt.bench"))
	ctx := context.Background()

	b.Run("source", func(b *testing.B) {
		src, err := nntp.New(nntp.Config{Addr: s.Addr(), MaxConns: 1})
		require.NoError(b, err)
		defer src.Close()
		for i := 0; b.Loop(); i++ {
			n := int64(1 + i%200)
			_, err := src.Fetch(ctx, "alt.bench", lease.Span{From: n, To: n})
			require.NoError(b, err)
		}
	})
	b.Run("textproto", func(b *testing.B) {
		nc, err := net.Dial("tcp", s.Addr())
		require.NoError(b, err)
		c := textproto.NewConn(nc)
		defer c.Close()
		_, _, err = c.ReadResponse(200)
		require.NoError(b, err)
		cmd := func(line string, code int) {
			id, err := c.Cmd("%s", line)
			require.NoError(b, err)
			c.StartResponse(id)
			_, _, err = c.ReadCodeLine(code)
			c.EndResponse(id)
			require.NoError(b, err)
		}
		cmd("MODE READER", 200)
		cmd("GROUP alt.bench", 211)
		for i := 0; b.Loop(); i++ {
			n := 1 + i%200
			cmd(fmt.Sprintf("OVER %d-%d", n, n), 224)
			_, err := c.ReadDotLines()
			require.NoError(b, err)
		}
	})
}
