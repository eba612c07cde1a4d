package nfo_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/nfo"
)

func TestDecodeCP437(t *testing.T) {
	t.Parallel()
	// Box drawing and a block, as NFO art has them, and a NUL.
	text, err := nfo.Decode([]byte("\xc9\xcd\xbb\r\n\xba Title: Some.Movie.2024.1080p \xba\r\n\xc8\xcd\xbc\xdb\x00\x1b[0m\n"))
	require.NoError(t, err)
	require.Equal(t, "╔═╗\n║ Title: Some.Movie.2024.1080p ║\n╚═╝█[0m\n", text)
}

func TestDecodeUTF8(t *testing.T) {
	t.Parallel()
	text, err := nfo.Decode([]byte("\xef\xbb\xbfÜber Grün\r\n"))
	require.NoError(t, err)
	require.Equal(t, "Über Grün\n", text)
}

func TestDecodeTooLarge(t *testing.T) {
	t.Parallel()
	_, err := nfo.Decode(bytes.Repeat([]byte("a"), nfo.MaxBytes+1))
	require.ErrorIs(t, err, nfo.ErrTooLarge)
}

func TestRead(t *testing.T) {
	t.Parallel()
	text, err := nfo.Decode([]byte("\xba  Title .......: The Ocean Documentary  \xba\n" +
		"  IMDb: https://www.imdb.com/title/tt1234567/\n  https://thetvdb.com/series/ocean-show\n"))
	require.NoError(t, err)
	require.Equal(t, nfo.Fields{Title: "The Ocean Documentary", IMDb: "tt1234567", TVDB: "ocean-show"}, nfo.Read(text))
	require.Equal(t, nfo.Fields{}, nfo.Read("nothing here\n"))
}
