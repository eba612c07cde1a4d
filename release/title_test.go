package release_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// TestTitleNotBoilerplate: the text around an obfuscated file name names
// the release only when it reads as a release's name. A web site, a
// poster's "uploaded by" or "posted by", or a soup of brackets names
// nothing: the hashed stem stays, and the release is 8020 Hashed. A
// bracketed segment that is a release's name wins over the soup around
// it.
func TestTitleNotBoilerplate(t *testing.T) {
	t.Parallel()
	parse := func(subject string) release.Set {
		if sub, ok := usenet.ParseSubject(subject); ok {
			subject = sub.Base
		}
		return release.ParseSet(subject)
	}
	for _, c := range []struct{ subject, name string }{
		{`[www.UsenetRevolution.com] - "a1b2c3d4e5f6g7h8.part01.rar"`, "a1b2c3d4e5f6g7h8"},
		{`(Uploaded by NZBGeek) [01/20] - "8f4a1c3e2b.part01.rar"`, "8f4a1c3e2b"},
		{`Posted by AutoPoster v1.2 - "2k8d7f6s5a4q3w2e.rar"`, "2k8d7f6s5a4q3w2e"},
		{`http://example.org/my.files - "x7k2q9.part1.rar" yEnc (1/5)`, "x7k2q9"},
		{`[#a.b.teevee@EFNet] [FULL] - "x7k2q9.part1.rar" yEnc (1/5)`, "x7k2q9"},
	} {
		set := parse(c.subject)
		require.Equal(t, c.name, set.Name, c.subject)
		require.Equal(t, release.CatHashed, release.Categorize(set.Name, []string{"alt.binaries.teevee"}), c.subject)
	}
	for _, c := range []struct{ subject, name string }{
		{`[12345]-[FULL]-[#a.b.teevee@EFNet]-[ Show.S01E01.720p.HDTV ]-[01/30] - "x7k2q9z8.r00"`, "Show.S01E01.720p.HDTV"},
		{`My.Show.S01E01.720p.WEB-DL [1/2] - "x7k2q9.part1.rar" yEnc (1/5)`, "My.Show.S01E01.720p.WEB-DL"},
		{`[PRiVATE] Some.Movie.2024.1080p.BluRay [1/2] - "x7k2q9.part1.rar" yEnc (1/5)`, "Some.Movie.2024.1080p.BluRay"},
		{`(Uploaded by NZBGeek) [Some.Show.S02E03.1080p.WEB] - "x7k2q9.rar" yEnc (1/5)`, "Some.Show.S02E03.1080p.WEB"},
	} {
		require.Equal(t, c.name, parse(c.subject).Name, c.subject)
	}
	// The keys of one posting stay one, whichever name wins.
	a := parse(`[12345]-[FULL]-[ Show.S01E01.720p.HDTV ]-[01/30] - "x7k2q9z8.r00" yEnc (1/5)`)
	b := parse(`[12345]-[FULL]-[ Show.S01E01.720p.HDTV ]-[02/30] - "x7k2q9z8.part02.rar" yEnc (1/5)`)
	require.Equal(t, a.Key, b.Key)
	require.Equal(t, a.Name, b.Name)
}

// TestTitleKeepsBracketedWords: a year or a tag in brackets is part of
// the title around an obfuscated file name ("Movie Title (2020) 1080p"),
// not something to cut out of it: without it "Movie Title 1080p" reads
// as nothing and the hashed stem would stay. Tags in brackets before the
// title ("[PRiVATE]") are no part of it. A UUID is an obfuscated name
// too.
func TestTitleKeepsBracketedWords(t *testing.T) {
	t.Parallel()
	parse := func(subject string) release.Set {
		if sub, ok := usenet.ParseSubject(subject); ok {
			subject = sub.Base
		}
		return release.ParseSet(subject)
	}
	for _, c := range []struct {
		subject, name string
		cat           int
	}{
		{`Movie Title (2020) 1080p [1/30] - "a1b2c3d4e5f6.rar" yEnc`, "Movie Title (2020) 1080p", release.CatMovieHD},
		{`Movie Title (2020) [1080p] [BluRay] [1/30] - "a1b2c3d4e5f6.rar" yEnc`, "Movie Title (2020) [1080p] [BluRay]", release.CatMovieHD},
		{`Artist - Album (2021) [FLAC] [03/15] - "8g7f6d5s4a3.flac" yEnc`, "Artist Album (2021) [FLAC]", release.CatLossless},
		{`Author - Book Title (2019) (retail) (epub) [1/1] - "a1b2c3d4e5f6.epub" yEnc`, "Author Book Title (2019) (retail) (epub)", release.CatEbook},
		{`Some Show (2019) S01E01 720p WEB [01/20] - "a1b2c3d4e5f6.part01.rar" yEnc`, "Some Show (2019) S01E01 720p WEB", release.CatTVHD},
		{`[FULL] Movie Title (2020) 1080p [1/30] - "a1b2c3d4e5f6.rar" yEnc`, "Movie Title (2020) 1080p", release.CatMovieHD},
		{`Some.Movie.2024.1080p.BluRay [1/2] - "0f8fad5b-d9cb-469f-a1c5-b2a6d4e2f3c1.part1.rar" yEnc`, "Some.Movie.2024.1080p.BluRay", release.CatMovieHD},
		{`[www.UsenetRevolution.com] - "0f8fad5b-d9cb-469f-a1c5-b2a6d4e2f3c1.part01.rar"`, "0f8fad5b-d9cb-469f-a1c5-b2a6d4e2f3c1", release.CatHashed},
		// A boilerplate segment refuses the whole text.
		{`Movie Title (2020) [www.example.com] [1/30] - "a1b2c3d4e5f6.rar" yEnc`, "a1b2c3d4e5f6", release.CatHashed},
		{`Movie Title (2020) 1080p [#a.b.movies@EFNet] [1/30] - "a1b2c3d4e5f6.rar" yEnc`, "a1b2c3d4e5f6", release.CatHashed},
		{`Movie Title (2020) 1080p (posted by someone) [1/30] - "a1b2c3d4e5f6.rar" yEnc`, "a1b2c3d4e5f6", release.CatHashed},
		// ...and leaves the text outside the brackets to be judged alone.
		{`My.Show.S01E01.720p [www.example.com] - "x7k2q9.part1.rar" yEnc (1/5)`, "My.Show.S01E01.720p", release.CatTVHD},
	} {
		set := parse(c.subject)
		require.Equal(t, c.name, set.Name, c.subject)
		require.Equal(t, c.cat, release.Categorize(set.Name, nil), c.subject)
	}
}
