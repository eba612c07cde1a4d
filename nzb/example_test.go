package nzb_test

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

func ExampleWrite() {
	posted := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := release.Release{Name: "Holiday & Family", Groups: []string{"alt.binaries.pictures"}, Posted: posted,
		Files: []release.File{{
			Subject: `[1/1] - "holiday.7z" yEnc`, Poster: "Ann <ann@example.test>", Date: posted, Total: 2,
			Parts: []usenet.Part{
				{N: 1, MessageID: "<p1.holiday@example.test>", Bytes: 716800},
				{N: 2, MessageID: "<p2.holiday@example.test>", Bytes: 12034},
			},
		}}}
	if err := nzb.Write(os.Stdout, r); err != nil {
		log.Fatal(err)
	}
	// Output:
	// <?xml version="1.0" encoding="UTF-8"?>
	// <!DOCTYPE nzb PUBLIC "-//newzBin//DTD NZB 1.1//EN" "http://www.newzbin.com/DTD/nzb/nzb-1.1.dtd">
	// <nzb xmlns="http://www.newzbin.com/DTD/2003/nzb">
	//  <head>
	//   <meta type="name">Holiday &amp; Family</meta>
	//  </head>
	//  <file poster="Ann &lt;ann@example.test&gt;" date="1748772000" subject="[1/1] - &quot;holiday.7z&quot; yEnc (1/2)">
	//   <groups>
	//    <group>alt.binaries.pictures</group>
	//   </groups>
	//   <segments>
	//    <segment bytes="716800" number="1">p1.holiday@example.test</segment>
	//    <segment bytes="12034" number="2">p2.holiday@example.test</segment>
	//   </segments>
	//  </file>
	// </nzb>
}

func ExampleSafeFileName() {
	fmt.Println(nzb.SafeFileName("Some Movie (2024) [1080p]"))
	fmt.Println(nzb.SafeFileName("../../etc/passwd"))
	fmt.Println(nzb.ContentDisposition(`evil"; filename="x.exe`))
	// Output:
	// Some Movie (2024) [1080p].nzb
	// etc_passwd.nzb
	// attachment; filename=evil_filename_x.exe.nzb
}

// An Encoder writes a release too large to hold whole one file at a
// time, as a store reads them; it writes nothing until the first file
// with a segment, so a release with none can still be answered 404.
func ExampleEncoder() {
	posted := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	e := nzb.NewEncoder(os.Stdout, release.Release{Name: "Big", Groups: []string{"alt.binaries.big"}, Posted: posted})
	for i := 1; i <= 2; i++ { // as many files as the store holds
		f := release.File{Subject: fmt.Sprintf(`[%d/2] - "big.part%d.rar" yEnc`, i, i), Poster: "p", Date: posted, Total: 1,
			Parts: []usenet.Part{{N: 1, MessageID: fmt.Sprintf("<%d.big@example.test>", i), Bytes: 100}}}
		if err := e.File(&f); err != nil {
			log.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// <?xml version="1.0" encoding="UTF-8"?>
	// <!DOCTYPE nzb PUBLIC "-//newzBin//DTD NZB 1.1//EN" "http://www.newzbin.com/DTD/nzb/nzb-1.1.dtd">
	// <nzb xmlns="http://www.newzbin.com/DTD/2003/nzb">
	//  <head>
	//   <meta type="name">Big</meta>
	//  </head>
	//  <file poster="p" date="1748772000" subject="[1/2] - &quot;big.part1.rar&quot; yEnc (1/1)">
	//   <groups>
	//    <group>alt.binaries.big</group>
	//   </groups>
	//   <segments>
	//    <segment bytes="100" number="1">1.big@example.test</segment>
	//   </segments>
	//  </file>
	//  <file poster="p" date="1748772000" subject="[2/2] - &quot;big.part2.rar&quot; yEnc (1/1)">
	//   <groups>
	//    <group>alt.binaries.big</group>
	//   </groups>
	//   <segments>
	//    <segment bytes="100" number="1">2.big@example.test</segment>
	//   </segments>
	//  </file>
	// </nzb>
}
