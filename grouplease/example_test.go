package grouplease_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/sqlstore"
)

type fixed struct{ low, high int64 }

func (f fixed) Watermarks(context.Context, string) (int64, int64, error) { return f.low, f.high, nil }

// A group planned from the provider's watermarks: history backfills 1,000
// articles before the head, and the tail leaves the newest 100 for later.
func ExamplePlanner() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "plan")
	defer os.RemoveAll(dir)
	st, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(dir, "db"), sqlstore.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if _, err := st.AddGroup(ctx, grouplease.Group{Name: "alt.binaries.example", RangeSize: 500}); err != nil {
		log.Fatal(err)
	}
	plan := grouplease.GroupPlan{Tail: true, History: true, HistoryBack: 1000, Margin: 100}
	if err := st.SetPlan(ctx, "alt.binaries.example", plan); err != nil {
		log.Fatal(err)
	}
	for _, high := range []int64{10_000, 10_700} { // two polls: new posts came in between
		p, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: st, Source: fixed{low: 1, high: high}})
		if err != nil {
			log.Fatal(err)
		}
		added, err := p.Pass(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range added {
			fmt.Printf("%s %d-%d\n", r.Lane, r.Start, r.End)
		}
	}
	// Output:
	// history 8901-9400
	// history 9401-9900
	// tail 9901-10400
	// tail 10401-10600
}

// A provider's reply, fit to show on a status line: its line break goes,
// and it is cut to 16 bytes, the cut marked.
func ExamplePeerText() {
	fmt.Printf("%q\n", grouplease.PeerText("411 no such\r\ngroup alt.binaries.example", 16))
	// Output: "411 no such  …"
}
