package yenctest_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/yenctest"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	every := make([]byte, 0, 256*4)
	for range 4 {
		for c := range 256 {
			every = append(every, byte(c))
		}
	}
	for _, data := range [][]byte{nil, {0}, []byte("hello"), every, randomBytes(rng, 100_000)} {
		for _, partSize := range []int{1, 7, 1000, 1 << 20} {
			if partSize == 1 && len(data) > 10_000 {
				continue // a hundred thousand parts of a byte prove nothing more
			}
			parts := yenctest.Encode("file name.bin", data, partSize, 0)
			var bodies [][]byte
			for _, p := range parts {
				require.Equal(t, len(parts), p.Total)
				for _, l := range bytes.Split(bytes.TrimSuffix(p.Body, []byte("\n")), []byte("\n")) {
					if bytes.HasPrefix(l, []byte("=y")) {
						continue
					}
					require.NotEmpty(t, l)
					require.LessOrEqual(t, len(l), yenctest.DefaultLine+1, "an escape may end a line one past its length")
					require.NotContains(t, []byte{'\t', ' '}, l[0], "no white space at a line's start")
					require.NotContains(t, []byte{'\t', ' '}, l[len(l)-1], "no white space at a line's end")
					require.NotContains(t, string(l), "\r")
					require.NotContains(t, string(l), "\x00")
				}
				bodies = append(bodies, p.Body)
			}
			rng.Shuffle(len(bodies), func(i, j int) { bodies[i], bodies[j] = bodies[j], bodies[i] })
			name, got, err := yenctest.Join(bodies)
			require.NoError(t, err)
			require.Equal(t, "file name.bin", name)
			require.Equal(t, len(data), len(got))
			require.True(t, bytes.Equal(data, got) || len(data) == 0)
		}
	}
}

func TestDecodeCatchesCorruption(t *testing.T) {
	t.Parallel()
	p := yenctest.Encode("x", []byte("some data to corrupt"), 0, 0)[0]
	body := bytes.Replace(p.Body, []byte("\n"), []byte("\nX"), 2) // an extra byte on the first data line
	_, err := yenctest.Decode(body)
	require.ErrorIs(t, err, yenctest.ErrCorrupt)
	_, err = yenctest.Decode([]byte("no yenc here\n"))
	require.ErrorIs(t, err, yenctest.ErrCorrupt)
}

func TestDotLines(t *testing.T) {
	t.Parallel()
	// '.' is 4+42: bytes of 4 at each line start make lines that start
	// with a dot, which NNTP dot-stuffs.
	data := bytes.Repeat([]byte{4}, 1000)
	p := yenctest.Encode("dots", data, 0, 100)[0]
	require.Contains(t, string(p.Body), "\n.")
	d, err := yenctest.Decode(p.Body)
	require.NoError(t, err)
	require.Equal(t, data, d.Data)
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}
