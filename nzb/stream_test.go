package nzb_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
)

// Stream writes what Write writes, calling begin once before its first
// byte; begin's error ends it with nothing written; a release with no
// file to write is ErrEmpty, begin uncalled.
func TestStream(t *testing.T) {
	t.Parallel()
	r := sample(3, 4)
	var whole bytes.Buffer
	require.NoError(t, nzb.Write(&whole, r))
	files := func(fs []release.File) func(func(release.File) error) error {
		return func(each func(release.File) error) error {
			for _, f := range fs {
				if err := each(f); err != nil {
					return err
				}
			}
			return nil
		}
	}

	var out bytes.Buffer
	begins := 0
	began, err := nzb.Stream(&out, r, files(r.Files), func() error {
		require.Zero(t, out.Len(), "begin comes before any byte")
		begins++
		return nil
	})
	require.NoError(t, err)
	require.True(t, began)
	require.Equal(t, 1, begins)
	require.Equal(t, whole.String(), out.String())

	out.Reset()
	refused := errors.New("grab limit")
	began, err = nzb.Stream(&out, r, files(r.Files), func() error { return refused })
	require.ErrorIs(t, err, refused)
	require.False(t, began)
	require.Zero(t, out.Len())

	began, err = nzb.Stream(&out, r, files(nil), func() error { t.Fatal("begin for no file"); return nil })
	require.ErrorIs(t, err, nzb.ErrEmpty)
	require.False(t, began)
}
