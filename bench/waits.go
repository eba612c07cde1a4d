package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// waitSampler samples pg_stat_activity every 50 ms: which statement each
// active session runs and what it waits on ("CPU": nothing), and which
// sessions sit idle in a transaction (the client's turn: the last
// statement is shown).
type waitSampler struct {
	cancel  context.CancelFunc
	done    chan struct{}
	counts  map[string]int
	samples int
}

func startWaits(ctx context.Context, url string) *waitSampler {
	ctx, cancel := context.WithCancel(ctx)
	w := &waitSampler{cancel: cancel, done: make(chan struct{}), counts: map[string]int{}}
	go func() {
		defer close(w.done)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			rows, err := conn.Query(ctx, `SELECT CASE WHEN state = 'active' THEN coalesce(wait_event_type || ':' || wait_event, 'CPU') ELSE state END,
					left(regexp_replace(query, '\s+', ' ', 'g'), 90)
				FROM pg_stat_activity WHERE state IN ('active', 'idle in transaction') AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)
			if err == nil {
				for rows.Next() {
					var wait, q string
					if rows.Scan(&wait, &q) == nil {
						w.counts[wait+"  "+q]++
					}
				}
				rows.Close()
				w.samples++
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// stop ends the sampling and prints the eight commonest (wait, statement)
// pairs with the mean number of sessions in each.
func (w *waitSampler) stop(out io.Writer, name string) {
	w.cancel()
	<-w.done
	if w.samples == 0 {
		return
	}
	keys := make([]string, 0, len(w.counts))
	total := 0
	for k, n := range w.counts {
		keys = append(keys, k)
		total += n
	}
	slices.SortFunc(keys, func(a, b string) int { return w.counts[b] - w.counts[a] })
	fmt.Fprintf(out, "  waits in %s: %.1f sessions active or idle in transaction on average over %d samples\n", name, float64(total)/float64(w.samples), w.samples)
	for _, k := range keys[:min(8, len(keys))] {
		fmt.Fprintf(out, "    %5.1f  %s\n", float64(w.counts[k])/float64(w.samples), strings.TrimSpace(k))
	}
}
