package nzbgettest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/internal/nzbgettest"
	"github.com/edgeindex/edgeindex/internal/yenctest"
	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
)

// TestNZBGetDownload is the harness on its own: a file posted into INN as
// yEnc, an NZB written by hand (nzb.Write of a release built here, not by
// the pipeline), NZBGet rebuilds the file byte for byte.
func TestNZBGetDownload(t *testing.T) {
	t.Parallel()
	nzbgettest.NZBGet(t)
	nzbgettest.RequireINN(t)
	const group = "alt.binaries.nzbget"
	inn := inntest.Start(t)
	inn.NewGroup(t, group)

	rng := rand.New(rand.NewPCG(7, 7))
	data := make([]byte, 25_000)
	for i := range data {
		data[i] = byte(rng.UintN(256))
	}
	const name = "harness.bin"
	day := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	f := release.File{Key: "k", Subject: fmt.Sprintf(`"%s" yEnc`, name), Name: name, Poster: "p <p@example.test>", Date: day,
		Groups: []string{group}}
	var arts []inntest.Article
	for _, p := range yenctest.Encode(name, data, 10_000, 0) {
		id := fmt.Sprintf("<harness.%d.%d@example.test>", p.Number, rng.Uint64())
		arts = append(arts, inntest.Article{MessageID: id, From: f.Poster, Newsgroups: group, Date: day.Format(time.RFC1123Z),
			Subject: fmt.Sprintf(`"%s" yEnc (%d/%d)`, name, p.Number, p.Total), Body: p.Body})
		f.Parts = append(f.Parts, collate.Part{N: p.Number, MessageID: id, Bytes: int64(len(p.Body))})
		f.Total = p.Total
	}
	inn.Post(t, arts)
	reader := inn.StartReader(t)

	file := filepath.Join(t.TempDir(), "harness.nzb")
	out, err := os.Create(file)
	require.NoError(t, err)
	require.NoError(t, nzb.Write(out, release.Release{Name: "harness", Groups: []string{group}, Files: []release.File{f}}))
	require.NoError(t, out.Close())
	nzbgettest.Validate(t, "../../nzb/testdata/nzb-1.1.dtd", file)

	res := nzbgettest.Download(t, reader.Addr(), file)
	sum := sha256.Sum256(data)
	require.Equal(t, map[string]string{name: hex.EncodeToString(sum[:])}, res.Files, "NZBGet's log:\n%s", res.Log)
}
