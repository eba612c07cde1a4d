package nzbgettest_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/internal/yenctest"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// postFile posts size random bytes (from seed) into group as a yEnc file
// called name, in parts of partSize, dated day, and returns the bytes and
// the file as a release holds it, for an NZB written by hand.
func postFile(t *testing.T, inn *inntest.Server, group, name string, seed uint64, size, partSize int, day time.Time) ([]byte, release.File) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(rng.UintN(256))
	}
	f := release.File{Key: "k", Subject: fmt.Sprintf(`"%s" yEnc`, name), Name: name, Poster: "p <p@example.test>", Date: day,
		Groups: []string{group}}
	var arts []inntest.Article
	for _, p := range yenctest.Encode(name, data, partSize, 0) {
		id := fmt.Sprintf("<%s.%d.%d@example.test>", name, p.Number, rng.Uint64())
		arts = append(arts, inntest.Article{MessageID: id, From: f.Poster, Newsgroups: group, Date: day.Format(time.RFC1123Z),
			Subject: fmt.Sprintf(`"%s" yEnc (%d/%d)`, name, p.Number, p.Total), Body: p.Body})
		f.Parts = append(f.Parts, usenet.Part{N: p.Number, MessageID: id, Bytes: int64(len(p.Body))})
		f.Total = p.Total
	}
	inn.Post(t, arts)
	return data, f
}
