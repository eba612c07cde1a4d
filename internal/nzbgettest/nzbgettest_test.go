package nzbgettest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/internal/nzbgettest"
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

	const name = "harness.bin"
	data, f := postFile(t, inn, group, name, 7, 25_000, 10_000, time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC))
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
