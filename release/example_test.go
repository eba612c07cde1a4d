package release_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

func ExampleParseSet() {
	for _, subject := range []string{
		`[01/15] - "My.Show.S01E02.part01.rar" yEnc`,
		`[14/15] - "My.Show.S01E02.vol07+08.par2" yEnc`,
		`(Some Movie) (3/40) "movie.7z.003" 52.5 MB yEnc`,
	} {
		s := release.ParseSet(subject)
		fmt.Printf("%s | %s | %d/%d\n", s.Name, s.Key, s.File, s.Files)
	}
	// Output:
	// My.Show.S01E02 | "my.show.s01e02" | 1/15
	// My.Show.S01E02 | "my.show.s01e02" | 14/15
	// movie | (some movie) "movie" | 3/40
}

// A worker stored two binaries of one release; a Builder makes the release.
func ExampleBuilder() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "release")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(dir, "db"), sqlstore.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// What a collating worker stores: one item per binary.
	store.AddGroup(ctx, grouplease.Group{Name: "alt.binaries.example", RangeSize: 100, ChunkSize: 100})
	store.AddRanges(ctx, grouplease.NewRanges{Group: "alt.binaries.example", From: 1, To: 100})
	l, _ := store.Grant(ctx, "worker", time.Minute)
	var items []batch.Item
	for i, name := range []string{"holiday.part1.rar", "holiday.part2.rar"} {
		b := usenet.Binary{Subject: fmt.Sprintf(`[%d/2] - "%s" yEnc`, i+1, name), Name: name, Poster: "Ann <ann@example.test>",
			Group: "alt.binaries.example", Date: "Sat, 04 May 2024 12:00:00 +0000", Total: 2, Complete: true,
			Parts: []usenet.Part{{N: 1, MessageID: fmt.Sprintf("<%d.1@x>", i), Bytes: 700}, {N: 2, MessageID: fmt.Sprintf("<%d.2@x>", i), Bytes: 300}}}
		v, _ := json.Marshal(b)
		items = append(items, batch.Item{Key: b.Key(), Value: v})
	}
	store.Put(ctx, l.Range.ID, lease.Fence{Node: "worker", Token: l.Token}, batch.Batch{From: 1, To: 100, Items: items})

	b, err := release.NewBuilder(release.Config{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	n, err := b.Pass(ctx) // Run would go on polling the feed
	if err != nil {
		log.Fatal(err)
	}
	page, _ := store.Releases(ctx, release.Query{Group: "alt.binaries.example"})
	r := page.Releases[0]
	fmt.Println(n, "items consumed")
	fmt.Printf("%s by %s: files %d/%d, parts %d/%d, complete %t, %d bytes, posted %s\n", r.Name, r.Poster,
		r.FilesSeen, r.FilesExpected, r.PartsSeen, r.PartsExpected, r.Complete, r.Bytes, r.Posted.Format(time.RFC3339))
	// Output:
	// 2 items consumed
	// holiday by Ann <ann@example.test>: files 2/2, parts 4/4, complete true, 2000 bytes, posted 2024-05-04T12:00:00Z
}
