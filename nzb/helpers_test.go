package nzb_test

import (
	"encoding/xml"
	"fmt"
	"time"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// doc is an NZB as encoding/xml reads it back; the benchmark marshals the
// same structure.
type doc struct {
	XMLName xml.Name  `xml:"http://www.newzbin.com/DTD/2003/nzb nzb"`
	Meta    []meta    `xml:"head>meta"`
	Files   []docFile `xml:"file"`
}

type meta struct {
	Type  string `xml:"type,attr"`
	Value string `xml:",chardata"`
}

type docFile struct {
	Poster   string    `xml:"poster,attr"`
	Date     int64     `xml:"date,attr"`
	Subject  string    `xml:"subject,attr"`
	Groups   []string  `xml:"groups>group"`
	Segments []segment `xml:"segments>segment"`
}

type segment struct {
	Bytes  int64  `xml:"bytes,attr"`
	Number int    `xml:"number,attr"`
	ID     string `xml:",chardata"`
}

// sample is a release of files files of parts parts each.
func sample(files, parts int) release.Release {
	day := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := release.Release{ID: 7, Name: "My.Show.S01E02", Poster: "Poster <p@example.test>", Groups: []string{"alt.binaries.test"},
		Posted: day}
	for i := range files {
		f := release.File{Key: fmt.Sprintf("k%d", i), Subject: fmt.Sprintf(`[%02d/%02d] - "My.Show.S01E02.part%02d.rar" yEnc`, i+1, files, i+1),
			Name: fmt.Sprintf("My.Show.S01E02.part%02d.rar", i+1), Poster: r.Poster, Date: day.Add(time.Duration(i) * time.Minute),
			Groups: []string{"alt.binaries.test", "alt.binaries.tv"}, Total: parts, Complete: true}
		for n := 1; n <= parts; n++ {
			f.Parts = append(f.Parts, usenet.Part{N: n, Article: int64(1000*i + n), MessageID: fmt.Sprintf("<part%dof%d.file%d@poster.example>", n, parts, i),
				Bytes: 739_124})
		}
		r.Files = append(r.Files, f)
	}
	return r
}

// docOf is what encoding/xml would marshal for r: the same structure.
func docOf(r release.Release) doc {
	d := doc{Meta: []meta{{Type: "name", Value: r.Name}}}
	for _, f := range r.Files {
		df := docFile{Poster: f.Poster, Date: f.Date.Unix(), Subject: fmt.Sprintf("%s (1/%d)", f.Subject, f.Total), Groups: f.Groups}
		for _, p := range f.Parts {
			df.Segments = append(df.Segments, segment{Bytes: p.Bytes, Number: p.N, ID: p.MessageID[1 : len(p.MessageID)-1]})
		}
		d.Files = append(d.Files, df)
	}
	return d
}
