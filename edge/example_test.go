package edge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
)

// stopAtIdle is an injected clock.Clock: none of its waits ends by itself
// (so no heartbeat is sent either), and the first idle wait, once the work
// is done, stops the worker.
type stopAtIdle struct{ stop context.CancelFunc }

func (s stopAtIdle) Now() time.Time { return time.Now() }

func (s stopAtIdle) After(d time.Duration) <-chan time.Time {
	if d == edge.DefaultIdle {
		s.stop()
	}
	return nil // the worker's wait ends with its context
}

// A worker whose handler counts overview lines, run against a coordinator
// holding one range of 5000 articles in chunks of 1000. The coordinator
// here is this package's small in-test one (newCoord), serving the node API
// over httptest; a real worker points BaseURL at a coordinator.
func Example() {
	c := newCoord(1000)
	c.addRange("alt.binaries.test", 1, 5000)
	srv := c.start()
	defer srv.Close()

	client, err := edge.NewClient(edge.Config{BaseURL: srv.URL, Token: c.token, HTTP: srv.Client()})
	if err != nil {
		log.Fatal(err)
	}

	// The handler reads each chunk's lines, skipping any below From (an
	// earlier holder stored them), and reports how many it read.
	count := edge.HandlerFunc(func(ctx context.Context, ch edge.Chunk) (edge.Output, error) {
		var n int64
		err := overview.ReadChunk(ch.Data, func(o overview.Overview) error {
			if o.Number >= ch.From && o.Number <= ch.To {
				n++
			}
			return nil
		})
		return edge.Output{Headers: n}, err
	})

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	w, err := edge.NewWorker(edge.WorkerConfig{
		Client:  client,
		Handler: count,
		// Stop at the first idle wait, when the work is done; a real worker
		// leaves Clock nil and runs until SIGTERM cancels ctx.
		Clock: stopAtIdle{stop},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	st := w.Stats()
	fmt.Printf("%d range, %d batches, %d headers\n", st.Ranges, st.Batches, st.Headers)
	// Output:
	// 1 range, 5 batches, 5000 headers
}

// A whole worker: it connects to a coordinator with its node token, reads
// the overview lines of each range it is granted, and stores every
// article's subject under its Message-ID, until ctx is cancelled (a real
// worker wires SIGTERM to it, with signal.NotifyContext). The coordinator
// here is this package's small in-test one, holding one group of 300
// articles; ctx ends once its work is done.
func ExampleWorker() {
	baseURL, token, ctx, coord := exampleCoordinator(300)
	defer coord.close()

	client, err := edge.NewClient(edge.Config{BaseURL: baseURL, Token: token})
	if err != nil {
		log.Fatal(err)
	}
	subjects := edge.HandlerFunc(func(_ context.Context, ch edge.Chunk) (edge.Output, error) {
		var out edge.Output
		err := overview.ReadChunk(ch.Data, func(o overview.Overview) error {
			if o.Number >= ch.From && o.Number <= ch.To { // lines below From are stored already
				subject, _ := json.Marshal(o.Subject)
				out.Items = append(out.Items, batch.Item{Key: o.MessageID, Value: subject})
				out.Headers++
			}
			return nil
		})
		return out, err
	})
	w, err := edge.NewWorker(edge.WorkerConfig{Client: client, Handler: subjects})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}

	items := coord.items()
	fmt.Printf("%d items stored; the first: %s %s\n", len(items), items[0].Key, items[0].Value)
	// Output:
	// 300 items stored; the first: <1@alt.binaries.test.synthetic> "[01/26] - \"Broken.Ocean.2003.FLAC-GRP.part01.rar\" yEnc (1/51)"
}

// exampleCoord is the in-test coordinator of ExampleWorker.
type exampleCoord struct {
	c    *coord
	srv  *httptest.Server
	stop context.CancelFunc
}

// exampleCoordinator serves one range of articles 1..n, in chunks of 100,
// and returns its URL, its node token, and a context that ends when the
// worker asks for more work once the range is done.
func exampleCoordinator(n int64) (string, string, context.Context, *exampleCoord) {
	c := newCoord(100)
	c.finals = true
	id := c.addRange("alt.binaries.test", 1, n)
	ctx, stop := context.WithCancel(context.Background())
	c.before = func(r *http.Request) (int, string) {
		if r.URL.Path == "/v1/leases" && c.rng(id).State == lease.StateDone {
			stop()
		}
		return 0, ""
	}
	srv := c.start()
	return srv.URL, c.token, ctx, &exampleCoord{c: c, srv: srv, stop: stop}
}

// items returns the items of every stored batch, in order.
func (e *exampleCoord) items() []batch.Item {
	var items []batch.Item
	for _, b := range e.c.batches() {
		items = append(items, b.Items...)
	}
	return items
}

func (e *exampleCoord) close() {
	e.stop()
	e.srv.Close()
}

// A handler reports the articles its chunk did not hold, so the
// coordinator fetches them again later.
func ExampleMissingFrom() {
	present := []int64{100, 101, 104, 105, 109}
	fmt.Println(edge.MissingFrom(100, 110, present))
	// Output:
	// [102 103 106 107 108 110]
}

// A final batch that asks for the next lease: the answer says the range is
// done and carries the next range, so the cycle needs no lease call.
func ExampleClient_PostBatchThenLease() {
	c := newCoord(100)
	c.finals, c.handOver = true, true
	c.addRange("alt.binaries.a", 1, 100)
	c.addRange("alt.binaries.b", 1, 100)
	srv := c.start()
	defer srv.Close()
	client, err := edge.NewClient(edge.Config{BaseURL: srv.URL, Token: c.token, HTTP: srv.Client()})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	l, ok, err := client.Lease(ctx)
	if err != nil || !ok {
		log.Fatal(ok, err)
	}
	for {
		r := l.Range
		res, err := client.PostBatchThenLease(ctx, r.ID, l.Token, api.Batch{From: r.Next, To: r.End, Headers: r.End - r.Next + 1, Final: true})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s done: %v\n", r.Group, res.Done)
		if res.Lease == nil {
			break // no work handed over: a worker would call Lease again
		}
		l = *res.Lease
	}
	// Output:
	// alt.binaries.a done: true
	// alt.binaries.b done: true
}
