package nzb_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// FuzzWrite renders a release of fuzzed strings and reads it back with
// encoding/xml: the output is always well-formed, and every value reads
// back as Text of what was written. The seed corpus is in
// testdata/fuzz/FuzzWrite.
func FuzzWrite(f *testing.F) {
	f.Add("My.Show", "Poster <p@x>", `"a.rar" yEnc`, "alt.binaries.test", "<1@x>", int64(100), 1, 2)
	f.Add("a<b>&c\"d'e", "\x00\x01\xff", "]]>\r\n\t", "g", " <\x7f@y> ", int64(-1), 0, 0)
	f.Fuzz(func(t *testing.T, name, poster, subject, group, id string, size int64, n, total int) {
		r := release.Release{Name: name, Poster: poster, Groups: []string{group}, Posted: time.Unix(1_700_000_000, 0),
			Files: []release.File{{Key: "k", Subject: subject, Poster: poster, Total: total,
				Parts: []usenet.Part{{N: n, MessageID: id, Bytes: size}, {N: n + 1, MessageID: "<fixed@id>", Bytes: 1}}}}}
		var b bytes.Buffer
		err := nzb.Write(&b, r)
		require.False(t, errors.Is(err, nzb.ErrEmpty), "a file with a group and a segment is written")
		require.NoError(t, err)
		d := parse(t, b.Bytes())
		if name != "" {
			require.Equal(t, nzb.Text(name), d.Meta[0].Value)
		}
		require.Len(t, d.Files, 1)
		got := d.Files[0]
		require.Equal(t, nzb.Text(poster), got.Poster)
		require.Equal(t, nzb.Text(subject)+" (1/"+strconv.Itoa(total)+")", got.Subject)
		require.Equal(t, []string{nzb.Text(group)}, got.Groups)
		want := []segment{{Bytes: 1, Number: n + 1, ID: "fixed@id"}}
		if trimmed := trimID(id); trimmed != "" {
			want = append([]segment{{Bytes: max(size, 0), Number: n, ID: nzb.Text(trimmed)}}, want...)
		}
		require.Equal(t, want, got.Segments)
	})
}

// trimID is a message-id as Write writes it: without white space around it
// and without its angle brackets.
func trimID(id string) string {
	id = strings.TrimSpace(id)
	id = strings.TrimPrefix(id, "<")
	id = strings.TrimSuffix(id, ">")
	return strings.TrimSpace(id)
}
