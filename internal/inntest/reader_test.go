package inntest_test

import (
	"net"
	"net/textproto"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/inntest"
)

// TestReader reads an article from nnrpd on its own port without MODE
// READER, as NZBGet does.
func TestReader(t *testing.T) {
	t.Parallel()
	s := inntest.Start(t)
	s.NewGroup(t, "alt.binaries.reader")
	arts := inntest.Generate(20, "alt.binaries.reader")
	s.Post(t, arts)
	r := s.StartReader(t)

	nc, err := net.Dial("tcp", r.Addr())
	require.NoError(t, err)
	c := textproto.NewConn(nc)
	defer c.Close()
	_, _, err = c.ReadCodeLine(200)
	require.NoError(t, err)
	count, _, _, err := inntest.Group(c, "alt.binaries.reader")
	require.NoError(t, err)
	require.Equal(t, int64(20), count)
	for _, a := range arts[:5] {
		id, err := c.Cmd("BODY %s", a.MessageID)
		require.NoError(t, err)
		c.StartResponse(id)
		_, _, err = c.ReadCodeLine(222)
		require.NoError(t, err)
		body, err := c.ReadDotBytes()
		c.EndResponse(id)
		require.NoError(t, err)
		require.Equal(t, string(a.Body), string(body), "the body as posted, dot-stuffing undone")
	}
}
