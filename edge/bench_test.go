package edge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sources"
)

// benchClient returns a client of srv with the default retry settings.
func benchClient(b *testing.B, srv *httptest.Server) *edge.Client {
	b.Helper()
	cl, err := edge.NewClient(edge.Config{BaseURL: srv.URL, Token: "t", HTTP: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// BenchmarkPostBatch posts a batch of 100 items to a server that only reads
// it and answers. The baseline is the same request made with net/http and
// encoding/json directly; the difference is the client's cost (checking the
// batch, building the request, mapping the answer).
func BenchmarkPostBatch(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"next":2000,"duplicate":false}`)
	}))
	b.Cleanup(srv.Close)
	bt := batch.Batch{From: 1000, To: 1999, Headers: 1000}
	for i := range 100 {
		bt.Items = append(bt.Items, batch.Item{Key: fmt.Sprintf("release-%d", i), Value: json.RawMessage(`{"files":27,"parts":1000}`)})
	}

	b.Run("baseline=net-http", func(b *testing.B) {
		hc := srv.Client()
		for b.Loop() {
			body, err := json.Marshal(bt)
			if err != nil {
				b.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/ranges/1/batch", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer t")
			req.Header.Set("Lease-Token", "7")
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var res batch.Result
			err = json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
			if err != nil || res.Next != 2000 {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("client", func(b *testing.B) {
		cl := benchClient(b, srv)
		ctx := context.Background()
		for b.Loop() {
			res, err := cl.PostBatch(ctx, 1, 7, bt)
			if err != nil || res.Next != 2000 {
				b.Fatal(err, res)
			}
		}
	})
}

// BenchmarkStream reads a stream of 20 chunks of 64 KiB. The baseline reads
// the same bytes with net/http and an edgeframe.Reader directly.
func BenchmarkStream(b *testing.B) {
	var buf bytes.Buffer
	fw := edgeframe.NewWriter(&buf)
	data := bytes.Repeat([]byte("x"), 64<<10)
	for i := range int64(20) {
		fw.Chunk(i*1000+1, (i+1)*1000, data)
	}
	fw.End()
	stream := buf.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", edgeframe.ContentType)
		w.Write(stream)
	}))
	b.Cleanup(srv.Close)

	drain := func(b *testing.B, next func() (edgeframe.Frame, error)) {
		chunks := 0
		for {
			f, err := next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if f.Type == edgeframe.TypeChunk {
				chunks++
			}
		}
		if chunks != 20 {
			b.Fatalf("%d chunks", chunks)
		}
	}
	b.Run("baseline=net-http", func(b *testing.B) {
		hc := srv.Client()
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			resp, err := hc.Get(srv.URL + "/v1/ranges/1/stream")
			if err != nil {
				b.Fatal(err)
			}
			fr, err := edgeframe.NewReader(resp.Body, edgeframe.Config{})
			if err != nil {
				b.Fatal(err)
			}
			drain(b, fr.Next)
			resp.Body.Close()
		}
	})
	b.Run("client", func(b *testing.B) {
		cl := benchClient(b, srv)
		ctx := context.Background()
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			st, err := cl.Stream(ctx, 1, 7)
			if err != nil {
				b.Fatal(err)
			}
			drain(b, st.Next)
			st.Close()
		}
	})
}

// BenchmarkWorkerFarCoordinator works a range of ten chunks with a
// handler that takes 2 ms a chunk, against a coordinator whose batch
// answers take 2 ms (a coordinator some way off, or one waiting for its
// commit). The baseline is the handler alone on the same chunks, in a
// loop: the pace the worker cannot beat. A worker that waited for each
// batch's answer before handling the next chunk would take the handler's
// time and the coordinator's, about twice the baseline; one batch in
// flight hides the coordinator's part while the handler is the slower.
func BenchmarkWorkerFarCoordinator(b *testing.B) {
	const (
		chunks = 10
		size   = 100
		work   = 2 * time.Millisecond
	)
	handler := func() *counter {
		return &counter{hook: func(context.Context, edge.Chunk) error { time.Sleep(work); return nil }}
	}
	b.Run("baseline=handler", func(b *testing.B) {
		src, err := sources.NewSynthetic(sources.SyntheticConfig{})
		if err != nil {
			b.Fatal(err)
		}
		var cs []edge.Chunk
		for _, s := range lease.Spans(1, chunks*size, size) {
			data, err := src.Fetch(context.Background(), "alt.a", s)
			if err != nil {
				b.Fatal(err)
			}
			cs = append(cs, edge.Chunk{Range: lease.Range{ID: 1, Group: "alt.a", Start: 1, End: chunks * size}, From: s.From, To: s.To, Data: data})
		}
		h := handler()
		for b.Loop() {
			for _, c := range cs {
				if _, err := h.HandleChunk(context.Background(), c); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("worker", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			c := newCoord(size)
			id := c.addRange("alt.a", 1, chunks*size)
			c.before = func(r *http.Request) (int, string) {
				if strings.HasSuffix(r.URL.Path, "/batch") {
					time.Sleep(work)
				}
				return 0, ""
			}
			r := startWorker(b, c, handler(), edge.WorkerConfig{})
			b.StartTimer()
			if err := r.untilIdle(b); err != nil {
				b.Fatal(err)
			}
			if got := c.rng(id); got.State != lease.StateDone {
				b.Fatalf("range %+v", got)
			}
		}
	})
}
