package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

// recorder keeps every overview line the workers are streamed, by number.
type recorder struct {
	mu   sync.Mutex
	seen map[int64]string
}

// recording records each chunk, then hands it to its worker's collator,
// window included, so ordered lanes carry it.
type recording struct {
	rec *recorder
	col *collate.Collator
}

func (h recording) HandleChunk(ctx context.Context, c edge.Chunk) (edge.Output, error) {
	err := overview.ReadChunk(c.Data, func(o overview.Overview) error {
		if o.Number >= c.From && o.Number <= c.To {
			h.rec.mu.Lock()
			h.rec.seen[o.Number] = string(overview.Append(nil, o))
			h.rec.mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return edge.Output{}, err
	}
	return h.col.HandleChunk(ctx, c)
}

func (h recording) SaveWindow() ([]byte, error)   { return h.col.SaveWindow() }
func (h recording) LoadWindow(state []byte) error { return h.col.LoadWindow(state) }

// TestINNEndToEnd indexes a group of a real INN server: the coordinator runs
// with --source nntp://, plans history and the tail from GROUP, and three
// collating workers index what 2,000 posted articles became; then new
// posts arrive and the tail follows. Every posted article is accounted for,
// the lines the workers were streamed are the ones INN answers to OVER,
// and cancelled articles are fetched again, then counted lost.
func TestINNEndToEnd(t *testing.T) {
	t.Parallel()
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("ordered=%t", ordered), func(t *testing.T) {
			t.Parallel()
			testINN(t, ordered)
		})
	}
}

func testINN(t *testing.T, ordered bool) {
	const group = "alt.binaries.edgeindex"
	inn := inntest.Start(t)
	inn.NewGroup(t, group)
	arts := inntest.Generate(2400, group)
	dotted := 0
	for _, a := range arts {
		if a.HasDotLine() {
			dotted++
		}
	}
	require.Positive(t, dotted, "some bodies are dot-stuffed on the wire")
	inn.Post(t, arts[:2000])
	// Cancelled articles leave holes in the numbering that no try fills.
	cancelled := map[string]bool{}
	for _, a := range []inntest.Article{arts[10], arts[777], arts[1500]} {
		inn.Ctlinnd(t, "cancel", a.MessageID)
		cancelled[a.MessageID] = true
	}

	data := t.TempDir()
	token, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	args := []string{"group", "add", group, "--range-size", "500", "--chunk-size", "100", "--plan", "tail,history"}
	if ordered {
		args = append(args, "--ordered")
	}
	_, err = run(t, data, args...)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	serve := startServe(t, data, "--source", "nntp://"+inn.Addr(), "--nntp-conns", "3", "--poll", "50ms", "--repair-delay", "10ms")
	base := serve.base

	rec := &recorder{seen: map[int64]string{}}
	var wg sync.WaitGroup
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	for range 3 {
		col, err := collate.New(collate.Config{})
		require.NoError(t, err)
		cl, err := edge.NewClient(edge.Config{BaseURL: base, Token: strings.TrimSpace(token)})
		require.NoError(t, err)
		w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: recording{rec: rec, col: col}, Idle: 20 * time.Millisecond,
			Lanes: []lease.Lane{lease.LaneTail, lease.LaneHistory}})
		require.NoError(t, err)
		wg.Go(func() { w.Run(wctx) })
	}

	store, err := sqlstore.Open(ctx, "sqlite://"+data+"/edgeindex.db", sqlstore.Config{})
	require.NoError(t, err)
	defer store.Close()

	// settled waits until the planner has seen high, every range is done
	// and every missing article is settled.
	settled := func(high int64) {
		t.Helper()
		require.Eventually(t, func() bool {
			plans, err := store.Plans(ctx)
			require.NoError(t, err)
			if len(plans) != 1 || plans[0].High != high || plans[0].Lag != 0 || plans[0].Missing.Waiting+plans[0].Missing.Repairing > 0 {
				return false
			}
			rs, err := store.Ranges(ctx, grouplease.RangeFilter{Group: group, Limit: 10000})
			require.NoError(t, err)
			for _, r := range rs {
				if r.State != lease.StateDone {
					return false
				}
			}
			return true
		}, 60*time.Second, 50*time.Millisecond, "indexing up to %d did not settle", high)
	}
	settled(2000)
	inn.Post(t, arts[2000:])
	settled(2400)
	stopWorkers()
	wg.Wait()

	// What INN answers to OVER is what the workers were streamed.
	rc := inn.DialReader(t)
	_, low, high, err := inntest.Group(rc, group)
	require.NoError(t, err)
	require.Equal(t, int64(1), low)
	require.Equal(t, int64(2400), high)
	over, err := inntest.Over(rc, low, high)
	require.NoError(t, err)
	require.Len(t, over, 2400-len(cancelled), "INN leaves cancelled articles out of OVER")
	want := map[int64]string{}
	number := map[string]int64{} // message-id -> article number
	for _, l := range over {
		o, err := overview.Parse([]byte(l))
		require.NoError(t, err)
		want[o.Number] = l + "\n"
		number[o.MessageID] = o.Number
	}
	rec.mu.Lock()
	require.Equal(t, want, rec.seen, "the workers were streamed exactly what OVER answers")
	rec.mu.Unlock()

	// Every posted article is accounted for: each part of a binary in
	// exactly one stored item, the others counted as headers.
	rs, err := store.Ranges(ctx, grouplease.RangeFilter{Group: group, Limit: 10000})
	require.NoError(t, err)
	var headers, repaired int64
	inRepair := map[int64]bool{} // articles that came in a repair range
	for _, r := range rs {
		require.Equal(t, r.End+1, r.Next)
		headers += r.Headers
		if r.Repair {
			repaired += r.Headers
			for n := r.Start; n <= r.End; n++ {
				inRepair[n] = true
			}
		}
	}
	require.Equal(t, int64(2400-len(cancelled)), headers, "one header per article INN kept")
	plans, err := store.Plans(ctx)
	require.NoError(t, err)
	// Articles whose overview INN had not written yet when GROUP already
	// counted them (posting went on while the planner polled) come in
	// repair ranges; cancelled ones never come.
	require.Equal(t, grouplease.Missing{Repaired: repaired, Lost: int64(len(cancelled))}, plans[0].Missing)
	t.Logf("%d articles arrived on a repair, %d lost", repaired, len(cancelled))

	// Parts of the binaries posted, by key; a binary is complete when no
	// part was cancelled and every part was posted.
	type posted struct {
		total    int
		parts    map[string]bool // message-ids
		repaired bool            // a part came in a repair range
		lanes    map[bool]bool   // the lanes its parts came in: history (true) or tail
	}
	binaries := map[string]*posted{}
	for _, a := range arts {
		sub, ok := usenet.ParseSubject(a.Subject)
		if !ok || cancelled[a.MessageID] {
			continue
		}
		k := usenet.Key(a.From, sub.Base, sub.Total)
		if binaries[k] == nil {
			binaries[k] = &posted{total: sub.Total, parts: map[string]bool{}, lanes: map[bool]bool{}}
		}
		binaries[k].parts[a.MessageID] = true
		binaries[k].repaired = binaries[k].repaired || inRepair[number[a.MessageID]]
		binaries[k].lanes[number[a.MessageID] <= plans[0].HistoryEnd] = true
	}
	got := map[string]map[string]int{} // key -> message-id -> times stored
	for _, it := range readFeed(t, store, group) {
		var b usenet.Binary
		require.NoError(t, json.Unmarshal(it.Value, &b))
		require.Equal(t, it.Key, usenet.Key(b.Poster, b.Subject, b.Total))
		if got[it.Key] == nil {
			got[it.Key] = map[string]int{}
		}
		for _, p := range b.Parts {
			got[it.Key][p.MessageID]++
		}
	}
	complete := 0
	for k, want := range binaries {
		for id := range got[k] {
			require.True(t, want.parts[id], "binary %s: stored part %s was posted in it", k, id)
			require.Equal(t, 1, got[k][id], "binary %s: part %s is stored once", k, id)
		}
		// A plain range emits every part it read. An ordered lane keeps an
		// incomplete binary's parts in its window (the lane's snapshot). A
		// part that came in a repair range went out on its own, and each
		// lane has a window of its own, so a lane never sees complete a
		// binary with a repaired part or with parts on both sides of where
		// history meets the tail.
		if !ordered || (len(want.parts) == want.total && !want.repaired && len(want.lanes) == 1) {
			complete++
			require.Equal(t, slices.Sorted(maps.Keys(want.parts)), slices.Sorted(maps.Keys(got[k])), "binary %s: every part is stored", k)
		}
	}
	for k := range got {
		require.Contains(t, binaries, k, "no binary is made up")
	}
	t.Logf("%d binaries, %d of them with every part stored, %d results", len(binaries), complete, len(got))

	serve.stop(t)
}

// readFeed reads the whole results feed of group.
func readFeed(t *testing.T, s batch.Store, group string) []batch.Stored {
	t.Helper()
	var all []batch.Stored
	cursor := ""
	for {
		p, err := s.Results(t.Context(), batch.Query{Group: group, After: cursor, Limit: 1000})
		require.NoError(t, err)
		if len(p.Results) == 0 {
			return all
		}
		all, cursor = append(all, p.Results...), p.Next
	}
}
