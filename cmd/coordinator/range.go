package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"

	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

var (
	rangeAddCommand = command{name: "range add", args: "GROUP FROM TO", summary: "add ranges over articles FROM..TO of a group, by hand",
		setup: (*Main).rangeAddFlags}
	rangeRetryCommand = command{name: "range retry", args: "GROUP [ID...]", summary: "put failed ranges (--failed, or by id) back to pending",
		setup: (*Main).rangeRetryFlags}
)

func (m *Main) rangeAddFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	laneName := fs.String("lane", "history", "history or tail")
	capture := fs.Bool("capture", false, "keep the range's chunks in the corpus")
	provider := providerFlag(fs)
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 3 {
			return usagef("range add GROUP FROM TO [--provider P] [--lane history|tail] [--capture]")
		}
		group, err := groupName(pos[0], *provider)
		if err != nil {
			return err
		}
		from, err1 := strconv.ParseInt(pos[1], 10, 64)
		to, err2 := strconv.ParseInt(pos[2], 10, 64)
		if err1 != nil || err2 != nil {
			return usagef("range add: FROM and TO are article numbers, not %q %q", pos[1], pos[2])
		}
		ln, err := lease.ParseLane(*laneName)
		if err != nil {
			return usagef("%v", err)
		}
		store, err := m.open(ctx)
		if err != nil {
			return err
		}
		rs, err := store.AddRanges(ctx, grouplease.NewRanges{Group: group, From: from, To: to, Lane: ln, Capture: *capture})
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "added %d ranges to %s (%s lane), %d..%d\n", len(rs), group, ln, from, to)
		return nil
	}
}

func (m *Main) rangeRetryFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	failed := fs.Bool("failed", false, "every failed range of the group")
	provider := providerFlag(fs)
	return func(ctx context.Context, pos []string) error {
		if len(pos) < 1 || (*failed == (len(pos) > 1)) {
			return usagef("range retry GROUP [--provider P] [--failed | ID...]: --failed or range ids")
		}
		group, err := groupName(pos[0], *provider)
		if err != nil {
			return err
		}
		var ids []int64
		for _, raw := range pos[1:] {
			id, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				return usagef("range retry: %q is not a range id", raw)
			}
			ids = append(ids, id)
		}
		store, err := m.open(ctx)
		if err != nil {
			return err
		}
		n, err := store.Retry(ctx, group, ids...)
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "%d ranges back to pending\n", n)
		return nil
	}
}
