package main

import "context"

// demo is filled in by the demo commit.
func (m *Main) demo(ctx context.Context, args []string) error {
	return usagef("demo: not built yet")
}
