package overview_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"log"

	"github.com/edgeindex/edgeindex/overview"
)

// A chunk written with Append and gzip, read back with ReadChunk.
func ExampleReadChunk() {
	var lines []byte
	for n := int64(1001); n <= 1003; n++ {
		lines = overview.Append(lines, overview.Overview{
			Number:    n,
			Subject:   fmt.Sprintf(`"file.rar" yEnc (%d/3)`, n-1000),
			From:      "poster@example.invalid",
			MessageID: fmt.Sprintf("<%d@example>", n),
			Bytes:     716800,
			Lines:     5500,
		})
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(lines); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}

	err := overview.ReadChunk(gz.Bytes(), func(o overview.Overview) error {
		fmt.Println(o.Number, o.Subject, o.MessageID)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1001 "file.rar" yEnc (1/3) <1001@example>
	// 1002 "file.rar" yEnc (2/3) <1002@example>
	// 1003 "file.rar" yEnc (3/3) <1003@example>
}

// A malformed line is an error wrapping ErrBadChunk.
func ExampleParse() {
	o, err := overview.Parse([]byte("42\tsubject\tfrom\tdate\t<42@example>\t\t1000\t8\tXref: host g:42\n"))
	fmt.Println(o.Number, o.Bytes, o.Extra, err)
	_, err = overview.Parse([]byte("42\tonly three fields\n"))
	fmt.Println(errors.Is(err, overview.ErrBadChunk), err)
	// Output:
	// 42 1000 [Xref: host g:42] <nil>
	// true bad chunk: overview line has 2 fields, want at least 8
}
