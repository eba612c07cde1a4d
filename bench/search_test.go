package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/edgeindex/edgeindex/release"
)

// TestCorpus checks that the corpus's names survive the builder's set
// parsing as they are, that its queries are two words of a stored name,
// and that a seed gives the same corpus.
func TestCorpus(t *testing.T) {
	c := newCorpus(searchSeed, 5000)
	names := map[string]bool{}
	var words [][]string
	tv, complete := 0, 0
	c.each(func(i int, r corpusRelease) bool {
		f := r.file(i)
		if got := release.ParseSet(f.Subject).Name; got != r.name {
			t.Fatalf("release %d: ParseSet names %q, want %q", i, got, r.name)
		}
		if i > 0 && i < 10 {
			t.Logf("%s", r.name)
		}
		names[r.name] = true
		words = append(words, release.SearchWords(r.name))
		if r.tv {
			tv++
		}
		if r.complete {
			complete++
		}
		return true
	})
	if tv < 2500 || tv > 3000 || complete < 4300 || complete > 4700 {
		t.Errorf("%d TV releases and %d complete of 5000", tv, complete)
	}
	qs := c.queries(200)
	if !slices.Equal(qs, newCorpus(searchSeed, 5000).queries(200)) {
		t.Fatal("two corpora of one seed give other queries")
	}
	for _, q := range qs {
		ws := strings.Fields(q)
		if len(ws) != 2 || !slices.Equal(release.SearchWords(q), slices.Compact(ws)) {
			t.Fatalf("query %q is not two search words", q)
		}
		found := slices.ContainsFunc(words, func(n []string) bool { return slices.Contains(n, ws[0]) && slices.Contains(n, ws[1]) })
		if !found {
			t.Errorf("query %q matches no name", q)
		}
	}
	t.Logf("queries: %q", qs[:10])
}
