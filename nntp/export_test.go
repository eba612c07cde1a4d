package nntp

import "github.com/edgeindex/edgeindex/overview"

func parseOverviewForTest(line []byte) (int64, error) {
	o, err := overview.Parse(line)
	return o.Number, err
}
