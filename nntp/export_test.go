package nntp

import "github.com/edgeindex/edgeindex/spool"

func parseOverviewForTest(line []byte) (int64, error) {
	o, err := spool.ParseOverview(line)
	return o.Number, err
}
