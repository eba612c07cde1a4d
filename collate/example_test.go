package collate_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/usenet"
)

func ExampleParseSubject() {
	s, ok := usenet.ParseSubject(`Re: [01/40] - "name.part01.rar" yEnc (07/50)`)
	fmt.Println(ok, s.Name, s.Part, s.Total, s.File, s.Files)
	fmt.Println(s.Base)
	_, ok = usenet.ParseSubject("what is the password?")
	fmt.Println(ok)
	// Output:
	// true name.part01.rar 7 50 1 40
	// [01/40] - "name.part01.rar" yEnc
	// false
}

// A chunk of four overview lines: a binary of two parts, a text post, and
// the first part of a binary that completes in a later chunk.
func ExampleCollator() {
	var lines []byte
	for i, subject := range []string{
		`[1/2] - "demo.rar" yEnc (1/2)`,
		`[1/2] - "demo.rar" yEnc (2/2)`,
		`Re: where is part 3?`,
		`[2/2] - "demo.par2" yEnc (1/3)`,
	} {
		n := int64(1001 + i)
		lines = overview.Append(lines, overview.Overview{
			Number: n, Subject: subject, From: "poster <p@example.invalid>",
			Date: "Mon, 02 Jan 2006 15:04:05 +0000", MessageID: fmt.Sprintf("<%d@example.invalid>", n),
			Bytes: 700_000, Lines: 5400,
		})
	}
	var chunk bytes.Buffer
	zw := gzip.NewWriter(&chunk)
	zw.Write(lines)
	zw.Close()

	c, err := collate.New(collate.Config{})
	if err != nil {
		log.Fatal(err)
	}
	r := lease.Range{ID: 1, Group: "alt.binaries.demo", Start: 1001, End: 2000}
	out, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: 1001, To: 1500, Data: chunk.Bytes()})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("headers:", out.Headers, "items:", len(out.Items), "waiting:", c.Stats().Window)
	var b usenet.Binary
	if err := json.Unmarshal(out.Items[0].Value, &b); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Items[0].Key == b.Key(), b.Name, b.Complete, len(b.Parts), b.Parts[1].MessageID)
	// Output:
	// headers: 4 items: 1 waiting: 1
	// true demo.rar true 2 <1002@example.invalid>
}
