package faulttest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/storetest"
	"github.com/edgeindex/edgeindex/usenet"
)

// record is a stored batch with the node that stored it.
type record struct {
	batch.Record
	node string
}

// verify checks what the fleet stored (see checkStored), that the
// coordinator saw no data race, and that no worker that was paused past
// its TTL stored anything, after it was continued, on a range whose lease
// it had lost.
func (h *harness) verify() {
	t := h.t
	t.Helper()
	w := workload{articles: map[string]int64{plainGroup: plainArticles, orderedGroup: tailEnd}, ranges: totalRanges}
	perRange := checkStored(t, h.store, w, func(g string) string {
		if g != orderedGroup {
			return ""
		}
		// Defect 6 of issue 9 did this: a lane range that changed hands
		// mid-range (its holder killed, paused, or cut off by a
		// coordinator outage longer than the TTL) lost the window of
		// [start, next) with its old holder. The new holder now rebuilds
		// it by streaming the stored chunks again (?from=); a worker says
		// so in its log when the coordinator did not send them.
		return fmt.Sprintf("; lane ranges granted again mid-range: %v; workers logged %d times %q", h.handovers(),
			h.workerLogsSay(defect6Said), defect6Said)
	})

	// The coordinator built with the race detector reports races on stderr.
	if b, err := os.ReadFile(h.coord.log); err == nil && strings.Contains(string(b), "WARNING: DATA RACE") {
		t.Errorf("the coordinator reported a data race: see %s", h.coord.log)
	}

	// The paused workers: nothing stored after SIGCONT on what they lost.
	for _, p := range h.paused {
		after := p.w.p.logFrom(p.logAfter)
		first := "none"
		for line := range strings.Lines(after) {
			if strings.Contains(line, "lease lost") || strings.Contains(line, "lane lost") {
				first = strings.TrimSpace(line)
				break
			}
		}
		clean := true
		for _, l := range p.held {
			if regexp.MustCompile(fmt.Sprintf(`msg="edge: range leased" range=%d `, l.Range.ID)).MatchString(after) {
				continue // it was granted the range again, legitimately
			}
			var late []string
			for _, b := range perRange[l.Range.ID] {
				if b.node == p.w.name && !b.At.Before(p.contAt) {
					late = append(late, fmt.Sprintf("%d..%d at +%v", b.From, b.To, b.At.Sub(p.contAt).Round(1e6)))
				}
			}
			if len(late) == 0 {
				continue
			}
			clean = false
			msg := fmt.Sprintf("%s, paused past its TTL on %s range %d (token %d), stored batches %v after SIGCONT", p.w.name,
				l.Range.Group, l.Range.ID, l.Token, late)
			switch {
			case !slices.Contains(p.unmoved, l.Range.ID):
				t.Errorf("%s, after the range was granted to another node", msg)
			case l.Range.Group == orderedGroup && len(p.lanes) > 0:
				// Defect 1 of issue 9: a lane grant must fence its ranges.
				t.Errorf("%s: its lane was granted to another node but the range was never fenced", msg)
			default:
				// Nobody was granted the range meanwhile: an expired lease
				// is only eligible, and its holder may go on (docs/api.md).
				t.Logf("%s; nobody else was granted the range meanwhile, so that is allowed", msg)
			}
		}
		if clean {
			t.Logf("paused %s: nothing stored after SIGCONT on the ranges it held; its first word on a lost lease: %s", p.w.name, first)
		}
	}
}

// workload is what a run indexes: groups of synthetic articles, each
// numbered from 1 to its last, in ranges.
type workload struct {
	articles map[string]int64 // group → its last article
	ranges   int              // over all groups
}

// checkStored checks what the fleet stored of the workload w, and returns
// the stored batches by range:
//   - every range is done, with next = end + 1, one header per article, no
//     attempt counted, and nothing failed or planned for repair;
//   - the stored batches of each range cover start..end exactly once, with
//     one header per article;
//   - the results feed holds each stored item once (as many as the batches
//     say), each item belongs to a stored batch and is a binary whose key
//     matches it, and every synthetic article is a part of exactly one item,
//     with its message-id;
//
// explain adds to the failure message of a group's feed.
func checkStored(t *testing.T, store *sqlstore.Store, w workload, explain func(group string) string) map[int64][]record {
	t.Helper()
	ctx := t.Context()

	// Ranges.
	ranges := map[int64]lease.Range{}
	byGroup := map[string][]lease.Range{}
	groups := slices.Sorted(maps.Keys(w.articles))
	for _, g := range groups {
		rs, err := store.Ranges(ctx, grouplease.RangeFilter{Group: g, Limit: 10000})
		require.NoError(t, err)
		byGroup[g] = rs
		for _, r := range rs {
			ranges[r.ID] = r
			require.Equal(t, lease.StateDone, r.State, "range %d state", r.ID)
			require.Equal(t, r.End+1, r.Next, "range %d next", r.ID)
			require.Equal(t, r.End-r.Start+1, r.Headers, "range %d: one header per synthetic article", r.ID)
			require.Zero(t, r.Attempts, "range %d attempts", r.ID)
			require.Empty(t, r.Reason, "range %d reason", r.ID)
			require.False(t, r.Repair, "range %d is a repair range: a worker reported articles missing", r.ID)
		}
	}
	require.Len(t, ranges, w.ranges)

	// Batches, from every node that ever ran.
	nodes, err := store.Nodes(ctx)
	require.NoError(t, err)
	var recs []record
	for _, n := range nodes {
		var before int64
		for {
			page, err := store.Batches(ctx, n.Name, before, 1000)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			for _, r := range page {
				recs = append(recs, record{Record: r, node: n.Name})
			}
			before = page[len(page)-1].ID
		}
	}
	perRange := map[int64][]record{}
	itemsWant := map[string]int{}
	type span struct{ rng, from, to int64 }
	stored := map[span]bool{}
	for _, r := range recs {
		rg, ok := ranges[r.Range]
		require.True(t, ok, "batch %d of %s is for range %d of no group under test", r.ID, r.node, r.Range)
		perRange[r.Range] = append(perRange[r.Range], r)
		itemsWant[rg.Group] += int(r.Items)
		stored[span{r.Range, r.From, r.To}] = true
	}
	for id, r := range ranges {
		bs := perRange[id]
		slices.SortFunc(bs, func(a, b record) int { return int(a.From - b.From) })
		next := r.Start
		for _, b := range bs {
			require.Equal(t, next, b.From, "range %d (%d..%d): batch %d..%d by %s does not start at the end of the one before: %s",
				id, r.Start, r.End, b.From, b.To, b.node, describe(bs))
			require.Equal(t, b.To-b.From+1, b.Headers, "range %d batch %d..%d headers", id, b.From, b.To)
			next = b.To + 1
		}
		require.Equal(t, r.End+1, next, "range %d (%d..%d): the batches end at %d: %s", id, r.Start, r.End, next-1, describe(bs))
	}
	t.Logf("verified: %d ranges done with next = end + 1; %d stored batches cover each article of both groups exactly once", len(ranges), len(recs))

	// The results feed.
	articles := w.articles
	for _, g := range groups {
		items := storetest.ReadFeed(t, store, g, 10000, itemsWant[g])
		require.Len(t, items, itemsWant[g], "%s: the feed holds the items the batches stored", g)
		seen := make([]uint8, articles[g]+1)
		ids := map[int64]bool{}
		parts, incomplete := 0, 0
		var bad []string
		for _, it := range items {
			require.False(t, ids[it.ID], "%s: item %d twice in the feed", g, it.ID)
			ids[it.ID] = true
			require.True(t, stored[span{it.Range, it.From, it.To}], "%s: item %d is for %d..%d of range %d, no stored batch", g, it.ID, it.From, it.To, it.Range)
			var b usenet.Binary
			require.NoError(t, json.Unmarshal(it.Value, &b), "%s: item %d", g, it.ID)
			require.Equal(t, it.Key, b.Key(), "%s: item %d key", g, it.ID)
			require.Equal(t, g, b.Group, "%s: item %d group", g, it.ID)
			if !b.Complete {
				incomplete++
			}
			for _, p := range b.Parts {
				require.Equal(t, fmt.Sprintf("<%d@%s.synthetic>", p.Article, g), p.MessageID, "%s: item %d part %d", g, it.ID, p.N)
				require.True(t, p.Article >= 1 && p.Article <= articles[g] && p.Article <= it.To, "%s: item %d (batch %d..%d) has article %d",
					g, it.ID, it.From, it.To, p.Article)
				if seen[p.Article] < 255 {
					seen[p.Article]++
				}
				parts++
			}
		}
		var dup, missing []int64
		for n := int64(1); n <= articles[g]; n++ {
			switch seen[n] {
			case 0:
				missing = append(missing, n)
			case 1:
			default:
				dup = append(dup, n)
			}
		}
		if len(dup) > 0 {
			bad = append(bad, fmt.Sprintf("%d articles are parts of more than one item (%s)", len(dup), runs(dup)))
		}
		if len(missing) > 0 {
			bad = append(bad, fmt.Sprintf("%d articles are parts of no item (%s)", len(missing), runs(missing)))
		}
		if incomplete > 0 {
			bad = append(bad, fmt.Sprintf("%d items are incomplete binaries", incomplete))
		}
		t.Logf("verified %s: %d feed items, %d binary parts, %d of %d articles exactly once", g, len(items), parts,
			articles[g]-int64(len(dup)+len(missing)), articles[g])
		if len(bad) == 0 {
			continue
		}
		t.Error(fmt.Sprintf("%s: %s", g, strings.Join(bad, "; ")) + explain(g))
	}
	return perRange
}

// defect6Said is what the worker logs when the coordinator does not stream
// the stored chunks a lane's new holder asks for to rebuild its window.
const defect6Said = "the coordinator did not stream stored chunks the window needs"

// workerLogsSay counts the lines of every worker's log that contain s.
func (h *harness) workerLogsSay(s string) int {
	n := 0
	for _, w := range h.workers {
		n += strings.Count(w.p.logFrom(0), s)
	}
	return n
}

// handover is a lane range granted again after some of it was stored: a
// worker log's "range leased" line of the ordered group with next > start.
type handover struct {
	node             string
	id, token        int64
	start, end, next int64
}

func (x handover) String() string {
	return fmt.Sprintf("range %d (%d..%d) to %s from %d with token %d", x.id, x.start, x.end, x.node, x.next, x.token)
}

var leasedLine = regexp.MustCompile(`msg="edge: range leased" range=(\d+) group=(\S+) lane=\S+ token=(\d+) start=(\d+) end=(\d+) next=(\d+)`)

// handovers reads every worker's log for the lane ranges granted mid-range.
func (h *harness) handovers() []handover {
	var out []handover
	for _, w := range h.workers {
		for _, m := range leasedLine.FindAllStringSubmatch(w.p.logFrom(0), -1) {
			if m[2] != orderedGroup {
				continue
			}
			x := handover{node: w.name}
			for i, v := range []*int64{&x.id, nil, &x.token, &x.start, &x.end, &x.next} {
				if v != nil {
					*v, _ = strconv.ParseInt(m[i+1], 10, 64)
				}
			}
			if x.next > x.start {
				out = append(out, x)
			}
		}
	}
	return out
}

// describe lists a range's batches for a failure message.
func describe(bs []record) string {
	var sb strings.Builder
	for _, b := range bs {
		fmt.Fprintf(&sb, "[%d..%d by %s at %s] ", b.From, b.To, b.node, b.At.Format("15:04:05.000"))
	}
	return sb.String()
}

// runs writes sorted numbers as runs, the first few only.
func runs(ns []int64) string {
	var out []string
	for i := 0; i < len(ns) && len(out) < 8; {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if i == j {
			out = append(out, fmt.Sprint(ns[i]))
		} else {
			out = append(out, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		}
		i = j + 1
	}
	s := strings.Join(out, ", ")
	if len(out) == 8 {
		s += ", …"
	}
	return s
}
