package inntest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
)

const deflateGroup = "alt.binaries.deflate"

// TestDeflateINNSameOverviewAsPlain: INN's nnrpd lists COMPRESS DEFLATE
// to a reader with no login and no inn.conf setting; a Source with the
// default compress=auto turns it on, reads chunks byte for byte the same
// as a plain one, and puts well under half the bytes on the wire. nnrpd
// ends each reply with zlib's Z_PARTIAL_FLUSH, which compress/flate's
// reader cannot take reply by reply (see internal/inflate).
func TestDeflateINNSameOverviewAsPlain(t *testing.T) {
	t.Parallel()
	s := inntest.Start(t)
	s.NewGroup(t, deflateGroup)
	s.Post(t, inntest.Generate(2000, deflateGroup))
	ctx := context.Background()

	open := func(mode nntp.CompressMode) (*nntp.Source, *proxy) {
		p := startProxy(t, s.Addr(), 0)
		src, err := nntp.New(nntp.Config{Addr: p.addr(), MaxConns: 2, Timeout: 5 * time.Second, Compress: mode})
		require.NoError(t, err)
		t.Cleanup(func() { src.Close() })
		return src, p
	}
	plain, plainWire := open(nntp.CompressNone)
	auto, autoWire := open(nntp.CompressAuto)
	strict, _ := open(nntp.CompressDeflate)
	for _, sp := range []lease.Span{{From: 1, To: 1000}, {From: 1001, To: 2000}, {From: 1990, To: 2100}, {From: 1, To: 1}} {
		want, err := plain.Fetch(ctx, deflateGroup, sp)
		require.NoError(t, err)
		got, err := auto.Fetch(ctx, deflateGroup, sp)
		require.NoError(t, err)
		require.Equal(t, want, got, "span %v", sp)
		got, err = strict.Fetch(ctx, deflateGroup, sp)
		require.NoError(t, err)
		require.Equal(t, want, got, "span %v", sp)
	}
	for _, src := range []*nntp.Source{auto, strict} {
		st := src.Stats()
		require.Equal(t, int64(2012), st.Lines, "lines read: 1000, 1000, 11 and 1")
		// One connection did it all: a reply held back in the inflater
		// would have cost a read timeout, and the connection.
		require.Equal(t, int64(1), st.Dials)
		require.Equal(t, int64(1), st.Deflate, "the connection is deflated")
		require.Zero(t, st.Gzip)
	}
	require.Zero(t, plain.Stats().Deflate)
	t.Logf("wire bytes: plain %d, deflate %d (%.2fx)", plainWire.bytes(), autoWire.bytes(),
		float64(autoWire.bytes())/float64(plainWire.bytes()))
	require.Less(t, autoWire.bytes(), plainWire.bytes()/2, "deflate puts fewer bytes on the wire")
}
