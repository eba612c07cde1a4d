// Package suite runs the cases of a conformance suite (spooltest,
// corpustest): each case a parallel subtest over the stores that one open
// function returns, some of them only for stores that keep the disk
// layout.
package suite

import "testing"

// Case is one case of a suite over stores that an O opens.
type Case[O any] struct {
	Name  string
	Fn    func(t *testing.T, open O)
	Files bool // looks at the files of a store that keeps the disk layout
}

// Run runs every case, each as a parallel subtest; with files false it
// leaves out the cases that look at files.
func Run[O any](t *testing.T, open O, files bool, cases []Case[O]) {
	t.Helper()
	for _, c := range cases {
		if c.Files && !files {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			c.Fn(t, open)
		})
	}
}
