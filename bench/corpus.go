package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// corpus makes n scene-style release names and their files, the same
// for a seed: TV episodes (Title.Words.S03E07.1080p.WEB-DL.x264-GRP) and
// films (Movie.Title.2019.2160p.BluRay.x265-GRP), their titles drawn with
// Zipf's law from catalogues whose words are drawn with Zipf's law from a
// vocabulary of a few thousand; posted over a year, 90% complete.
type corpus struct {
	seed  uint64
	n     int
	vocab []string
	shows []title
	films []title
	grps  []string
	start time.Time
}

// title is a show or a film: its words, capitalized, and a film's year.
type title struct {
	words []string
	year  int
}

const (
	vocabSize = 4000
	showCount = 20_000
	filmCount = 40_000
)

var (
	resolutions = []string{"1080p", "1080p", "1080p", "720p", "720p", "2160p", "480p"}
	tvSources   = []string{"WEB-DL", "WEB-DL", "WEBRip", "HDTV", "HDTV", "AMZN.WEB-DL", "NF.WEB-DL", "BluRay"}
	filmSources = []string{"BluRay", "BluRay", "WEB-DL", "WEBRip", "BDRip", "REMUX.BluRay", "DVDRip"}
	codecs      = []string{"x264", "x264", "x264", "x265", "H.264", "HEVC", "x265.10bit"}
	extraTags   = []string{"PROPER", "REPACK", "INTERNAL", "MULTi", "DUBBED"}
	newsgroups  = map[bool][]string{
		true:  {"alt.binaries.teevee", "alt.binaries.hdtv", "alt.binaries.hdtv.x264", "alt.binaries.multimedia"},
		false: {"alt.binaries.movies", "alt.binaries.movies.divx", "alt.binaries.hd.movies", "alt.binaries.multimedia"},
	}
	// reserved are words the vocabulary must not make: the tags' own.
	reserved = map[string]bool{"web": true, "dl": true, "hdtv": true, "nf": true, "amzn": true, "hevc": true, "remux": true,
		"multi": true, "proper": true, "repack": true, "internal": true, "dubbed": true, "bluray": true, "webrip": true, "bdrip": true, "dvdrip": true}
)

func newCorpus(seed uint64, n int) *corpus {
	r := rand.New(rand.NewPCG(seed, 1))
	c := &corpus{seed: seed, n: n, start: time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)}
	cons := strings.Split("b c d f g h j k l m n p r s t v w z br cr dr fr gr kr pr st tr th sh ch", " ")
	vows := strings.Split("a e i o u a e o ai ea ou", " ")
	ends := strings.Split("n r s l t x k m nd rt", " ")
	seen := map[string]bool{}
	for len(c.vocab) < vocabSize {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteString(cons[r.IntN(len(cons))])
			b.WriteString(vows[r.IntN(len(vows))])
		}
		if r.IntN(2) == 0 {
			b.WriteString(ends[r.IntN(len(ends))])
		}
		w := b.String()
		if len(w) < 3 || seen[w] || reserved[w] {
			continue
		}
		seen[w] = true
		c.vocab = append(c.vocab, strings.ToUpper(w[:1])+w[1:])
	}
	words := rand.NewZipf(r, 1.1, 10, vocabSize-1)
	titles := func(k int, film bool) []title {
		out := make([]title, k)
		for i := range out {
			for nw := 1 + r.IntN(4); len(out[i].words) < nw; {
				if w := c.vocab[words.Uint64()]; !slices.Contains(out[i].words, w) {
					out[i].words = append(out[i].words, w)
				}
			}
			if film {
				out[i].year = 1960 + int(66*(1-r.Float64()*r.Float64())) // more recent films are more common
			}
		}
		return out
	}
	c.shows, c.films = titles(showCount, false), titles(filmCount, true)
	for range 400 {
		var b strings.Builder
		for range 3 + r.IntN(4) {
			b.WriteByte(byte('A' + r.IntN(26)))
		}
		c.grps = append(c.grps, b.String())
	}
	return c
}

// corpusRelease is one release of the corpus.
type corpusRelease struct {
	name     string
	tv       bool
	title    title
	episode  string // "S03E07" for a TV release
	group    string
	poster   string
	posted   time.Time
	complete bool
	bytes    int64
}

// each calls fn with the releases in order, until it returns false.
func (c *corpus) each(fn func(i int, r corpusRelease) bool) {
	r := rand.New(rand.NewPCG(c.seed, 2))
	shows := rand.NewZipf(r, 1.05, 5, showCount-1)
	films := rand.NewZipf(r, 1.05, 5, filmCount-1)
	groups := rand.NewZipf(r, 1.2, 3, uint64(len(c.grps)-1))
	year := 365 * 24 * time.Hour
	for i := range c.n {
		var rel corpusRelease
		rel.tv = r.IntN(100) < 55
		var parts []string
		if rel.tv {
			rel.title = c.shows[shows.Uint64()]
			rel.episode = fmt.Sprintf("S%02dE%02d", 1+r.IntN(r.IntN(12)+1), 1+r.IntN(24))
			parts = append(slices.Clone(rel.title.words), rel.episode)
		} else {
			rel.title = c.films[films.Uint64()]
			parts = append(slices.Clone(rel.title.words), strconv.Itoa(rel.title.year))
		}
		if r.IntN(100) < 4 {
			parts = append(parts, extraTags[r.IntN(len(extraTags))])
		}
		parts = append(parts, resolutions[r.IntN(len(resolutions))])
		if rel.tv {
			parts = append(parts, tvSources[r.IntN(len(tvSources))])
		} else {
			parts = append(parts, filmSources[r.IntN(len(filmSources))])
		}
		rel.group = c.grps[groups.Uint64()]
		rel.name = strings.Join(parts, ".") + "." + codecs[r.IntN(len(codecs))] + "-" + rel.group
		rel.poster = fmt.Sprintf("poster%03d <poster%03d@nowhere.example>", r.IntN(300), r.IntN(300))
		// In posting order, over a year, a few minutes of jitter.
		rel.posted = c.start.Add(time.Duration(float64(year) * (float64(i) + r.Float64()) / float64(c.n))).Truncate(time.Microsecond)
		rel.complete = r.IntN(100) < 90
		rel.bytes = (200 + r.Int64N(8000)) << 20
		if !fn(i, rel) {
			return
		}
	}
}

// file is release i's one file, as the results feed gives it: complete
// with its one part, or one part of two.
func (r corpusRelease) file(i int) release.File {
	groups := newsgroups[r.tv]
	g := groups[i%len(groups)]
	f := release.File{
		Key:     fmt.Sprintf("bench-%08d", i),
		Subject: fmt.Sprintf(`[1/1] - "%s.mkv" yEnc`, r.name),
		Name:    r.name + ".mkv",
		Poster:  r.poster,
		Date:    r.posted,
		Groups:  []string{g},
		Total:   1,
		Parts: []usenet.Part{{N: 1, Article: int64(i) + 1, MessageID: fmt.Sprintf("<part1.%d@nowhere.example>", i),
			Bytes: r.bytes}},
		Complete: true,
		Bytes:    r.bytes,
	}
	if !r.complete {
		f.Total, f.Complete = 2, false
	}
	return f
}

// queries draws k two-word queries from the stored names, the way users
// type them: a title word and the episode (TV) or the year (films), or
// two words of the title; in lower case, as the handler's words are.
func (c *corpus) queries(k int) []string {
	pick := rand.New(rand.NewPCG(c.seed, 3))
	want := map[int][]int{} // release index -> which of the picks
	for j := range k {
		i := pick.IntN(c.n)
		want[i] = append(want[i], j)
	}
	out := make([]string, k)
	c.each(func(i int, r corpusRelease) bool {
		for _, j := range want[i] {
			ws := r.title.words
			w := ws[pick.IntN(len(ws))]
			var q string
			switch {
			case len(ws) > 1 && pick.IntN(2) == 0:
				a := pick.IntN(len(ws))
				b := (a + 1 + pick.IntN(len(ws)-1)) % len(ws)
				q = ws[a] + " " + ws[b]
			case r.tv:
				q = w + " " + r.episode
			default:
				q = w + " " + strconv.Itoa(r.title.year)
			}
			out[j] = strings.ToLower(q)
		}
		return true
	})
	return out
}
