package inntest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	mrand "math/rand/v2"
	"strings"
	"time"
)

// Article is a news article to post.
type Article struct {
	MessageID  string // with its angle brackets: <part1@example.test>
	From       string
	Subject    string
	Newsgroups string // comma-separated
	Date       string // RFC 5322; empty means now
	// Body is the body's lines, each ending in "\n" ("\r\n" is accepted too).
	// On the wire each line ends in CRLF and a line starting with "." gets
	// one more, which the reader takes off again: Body is what a reader's
	// ARTICLE returns (with "\n" line ends).
	Body  []byte
	Extra []Header // more headers, after the required ones
}

// Header is one header field.
type Header struct {
	Name, Value string
}

// Bytes is the article as Post sends it, before dot-stuffing: the headers
// (Path first), an empty line and the body, lines ending in "\n".
func (a Article) Bytes() []byte {
	var b bytes.Buffer
	date := a.Date
	if date == "" {
		date = time.Now().UTC().Format(time.RFC1123Z)
	}
	fmt.Fprintf(&b, "Path: inntest!not-for-mail\nFrom: %s\nNewsgroups: %s\nSubject: %s\nMessage-ID: %s\nDate: %s\n",
		a.From, a.Newsgroups, a.Subject, a.MessageID, date)
	for _, h := range a.Extra {
		fmt.Fprintf(&b, "%s: %s\n", h.Name, h.Value)
	}
	b.WriteByte('\n')
	b.Write(a.Body)
	if len(a.Body) > 0 && a.Body[len(a.Body)-1] != '\n' {
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func (a Article) check() error {
	if !strings.HasPrefix(a.MessageID, "<") || !strings.HasSuffix(a.MessageID, ">") || strings.ContainsAny(a.MessageID, " \t\r\n") {
		return fmt.Errorf("malformed Message-ID %q", a.MessageID)
	}
	for name, v := range map[string]string{"From": a.From, "Subject": a.Subject, "Newsgroups": a.Newsgroups} {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("no %s", name)
		}
		if strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("%s with a line break", name)
		}
	}
	return nil
}

// HasDotLine reports whether a line of the body starts with ".", so that it
// is dot-stuffed on the wire.
func (a Article) HasDotLine() bool {
	return len(a.Body) > 0 && a.Body[0] == '.' || bytes.Contains(a.Body, []byte("\n."))
}

// posters are the From lines of generated articles.
var posters = []string{
	"Poster One <poster1@example.test>",
	"yenc-poster@binaries.example.test (Yenc Poster)",
	`"Night Owl" <owl@example.invalid>`,
	"anon <anonymous@news.example.test>",
	"Uploader <upl0ader@example.net>",
}

var shows = []string{"My.Show", "Another.Series", "Documentary.Night", "Some.Movie"}

// Generate makes n articles for newsgroups, as a binaries group has them:
// multi-part yEnc posts (subjects like `"My.Show.S01E02.part03.rar" yEnc
// (17/40)` and `[01/15] - "file.nfo" yEnc (1/1)`) from several posters,
// their parts interleaved, and text posts between them. Some bodies have
// lines that start with "." (see HasDotLine). The content is the same for
// the same n; the Message-IDs are new on every call, so two calls can post
// to one server.
func Generate(n int, newsgroups string) []Article {
	var tok [6]byte
	rand.Read(tok[:])
	run := hex.EncodeToString(tok[:])
	rng := mrand.New(mrand.NewPCG(uint64(n), 0x1ee7))
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

	// A few posters upload at once, each its own release, so parts of
	// different binaries interleave.
	newUpload := func(k int) *upload { return startUpload(k, rng) }
	active := []*upload{newUpload(0), newUpload(1), newUpload(2)}
	nextUpload := 3

	arts := make([]Article, 0, n)
	for i := 0; len(arts) < n; i++ {
		a := Article{
			MessageID:  fmt.Sprintf("<%d.%s@inntest.example.test>", len(arts)+1, run),
			Newsgroups: newsgroups,
			Date:       base.Add(time.Duration(len(arts)) * time.Second).Format(time.RFC1123Z),
		}
		if rng.IntN(6) == 0 {
			// A text post.
			a.From = posters[rng.IntN(len(posters))]
			a.Subject = fmt.Sprintf("Re: request %d - anyone have the rest?", len(arts)+1)
			a.Extra = []Header{{"Organization", "inntest"}, {"User-Agent", "inntest/1"}}
			a.Body = textBody(len(arts), rng)
			arts = append(arts, a)
			continue
		}
		slot := rng.IntN(len(active))
		u := active[slot]
		name := u.files[u.file]
		parts := u.parts[u.file]
		a.Subject = u.subject()
		a.From = u.poster
		a.Extra = []Header{{"X-Newsposter", "inntest yEnc poster"}}
		a.Body = yencBody(name, u.part, parts, len(arts)%25 == 7, rng)
		arts = append(arts, a)
		u.part++
		if u.part > parts {
			u.file++
			u.part = 1
			if u.file == len(u.files) {
				active[slot] = newUpload(nextUpload)
				nextUpload++
			}
		}
	}
	return arts
}

// upload is a poster's release being posted: its files, each in parts.
type upload struct {
	poster   string
	release  string
	files    []string // file names; the first is the .nfo
	parts    []int    // parts per file
	file     int      // current file
	part     int      // next part, from 1
	style    int
	sizeMB   float64
	finished bool
}

// startUpload is the k-th upload of a Generate call.
func startUpload(k int, rng *mrand.Rand) *upload {
	show := shows[k%len(shows)]
	rel := fmt.Sprintf("%s.S%02dE%02d", show, 1+k%3, 1+k%12)
	u := &upload{poster: posters[k%len(posters)], release: rel, style: k % 4, sizeMB: 50 + float64(k%7)*12.5}
	u.files = append(u.files, rel+".nfo")
	u.parts = append(u.parts, 1)
	for i := 1; i <= 2+k%3; i++ {
		u.files = append(u.files, fmt.Sprintf("%s.part%02d.rar", rel, i))
		u.parts = append(u.parts, 5+rng.IntN(36))
	}
	u.files = append(u.files, rel+".par2")
	u.parts = append(u.parts, 1)
	u.part = 1
	return u
}

// subject is the subject of u's next part, in u's style.
func (u *upload) subject() string {
	total, name, parts := len(u.files), u.files[u.file], u.parts[u.file]
	switch u.style {
	case 0:
		return fmt.Sprintf(`"%s" yEnc (%d/%d)`, name, u.part, parts)
	case 1:
		return fmt.Sprintf(`[%02d/%02d] - "%s" yEnc (%d/%d)`, u.file+1, total, name, u.part, parts)
	case 2:
		return fmt.Sprintf(`%s [%d/%d] - "%s" yEnc (%d/%d)`, u.release, u.file+1, total, name, u.part, parts)
	}
	return fmt.Sprintf(`(%s) [%02d/%02d] - "%s" %.1f MB yEnc (%d/%d)`, strings.ReplaceAll(u.release, ".", " "), u.file+1, total, name, u.sizeMB, u.part, parts)
}

// textBody is a short text body; every third has lines that start with a
// dot, one of them a lone ".".
func textBody(i int, rng *mrand.Rand) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Hello group,\n\nPost %d. Lines: %d.\n", i, rng.IntN(100))
	if i%3 == 0 {
		b.WriteString(".\n..\n.leading dot\n...three dots\n. space after a dot\n")
	}
	b.WriteString("-- \nsig\n")
	return b.Bytes()
}

// yencBody is a yEnc part: =ybegin, =ypart, encoded lines of 128 bytes,
// =yend. With dotLines, some encoded lines start with "." (which yEnc
// leaves unescaped).
func yencBody(name string, part, parts int, dotLines bool, rng *mrand.Rand) []byte {
	const line = 128
	data := make([]byte, 200+rng.IntN(200))
	for i := range data {
		data[i] = byte(rng.UintN(256))
	}
	if dotLines {
		// '.' is 4+42: make the first byte of the first lines encode to it.
		for i := 0; i < len(data); i += line {
			data[i] = 4
		}
	}
	size := len(data) * parts
	begin := (part-1)*len(data) + 1
	var b bytes.Buffer
	fmt.Fprintf(&b, "=ybegin part=%d total=%d line=%d size=%d name=%s\n", part, parts, line, size, name)
	fmt.Fprintf(&b, "=ypart begin=%d end=%d\n", begin, begin+len(data)-1)
	col := 0
	for _, c := range data {
		e := c + 42
		switch e {
		case 0, '\n', '\r', '=', '\t':
			b.WriteByte('=')
			e += 64
			col++
		}
		b.WriteByte(e)
		col++
		if col >= line {
			b.WriteByte('\n')
			col = 0
		}
	}
	if col > 0 {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "=yend size=%d part=%d pcrc32=%08x\n", len(data), part, crc32.ChecksumIEEE(data))
	return b.Bytes()
}
