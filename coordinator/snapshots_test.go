package coordinator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/miniotest"
	"github.com/edgeindex/edgeindex/lease"
)

// files lists the snapshot directory, temporary files included, or, on a
// store that is no directory, its blobs and the blobs being Put.
func (h *harness) files() []string {
	h.t.Helper()
	var out []string
	if h.snapDir != "" {
		entries, err := os.ReadDir(h.snapDir)
		require.NoError(h.t, err)
		for _, e := range entries {
			out = append(out, e.Name())
		}
	} else {
		seen := map[string]bool{}
		require.NoError(h.t, h.snaps.List(h.t.Context(), "", func(info blobstore.Info) error {
			seen[info.Key] = true
			return nil
		}))
		for _, k := range h.snaps.puts() {
			seen[k] = true
		}
		for k := range seen {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// watchedStore is a blobstore.Store that knows the keys being Put, so that
// a test sees an upload being written on a store that shows nothing of it
// until it ends (S3), as a directory shows its temporary file.
type watchedStore struct {
	blobstore.Store
	mu      sync.Mutex
	putting map[string]int
}

func (w *watchedStore) Put(ctx context.Context, key string, r io.Reader, size int64) (int64, error) {
	w.mu.Lock()
	w.putting[key]++
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		if w.putting[key]--; w.putting[key] == 0 {
			delete(w.putting, key)
		}
		w.mu.Unlock()
	}()
	return w.Store.Put(ctx, key, r, size)
}

// puts are the keys being Put now.
func (w *watchedStore) puts() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k := range w.putting {
		out = append(out, k)
	}
	return out
}

// snapStores are the snapshot stores the snapshot tests run on: a
// directory, and a bucket of a real MinIO (internal/miniotest).
var snapStores = []struct {
	name  string
	tweak func(t *testing.T, c *coordinator.Config)
}{
	{"disk", func(*testing.T, *coordinator.Config) {}},
	{"minio", func(t *testing.T, c *coordinator.Config) { c.Snapshots = miniotest.Store(t) }},
}

// eachSnapStore runs fn on each snapshot store, as parallel subtests; fn
// passes snap to newHarness's tweak.
func eachSnapStore(t *testing.T, fn func(t *testing.T, snap func(*testing.T, *coordinator.Config))) {
	for _, s := range snapStores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			fn(t, s.tweak)
		})
	}
}

// both is a tweak of the snapshot store followed by another tweak, which
// may be nil.
func both(t *testing.T, snap func(*testing.T, *coordinator.Config), tweak func(*coordinator.Config)) func(*coordinator.Config) {
	return func(c *coordinator.Config) {
		snap(t, c)
		if tweak != nil {
			tweak(c)
		}
	}
}

// laneGrant grants the lane of an ordered group to token's node.
func (h *harness) laneGrant(token string, ln lease.Lane) grouplease.GroupLease {
	h.t.Helper()
	r := h.do("POST", "/v1/groups/lease?lane="+string(ln), token, 0, nil)
	require.Equal(h.t, http.StatusOK, r.status, "%s", r.body)
	var gl grouplease.GroupLease
	require.NoError(h.t, json.Unmarshal(r.body, &gl))
	return gl
}

// countingBody counts the bytes the server reads of a body.
type countingBody struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Defect 2: an upload that the fence refuses writes nothing, and does not
// even read the body.
func TestSnapshotFenceBeforeWrite(t *testing.T) {
	t.Parallel()
	eachSnapStore(t, func(t *testing.T, snapStore func(*testing.T, *coordinator.Config)) {
		eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
			h := newHarness(t, url(t), both(t, snapStore, nil))
			g := h.group("o", true, 1, 200, lease.LaneTail)
			body := gz(t, "window")
			for name, path := range map[string]string{
				"no such group":               "/v1/groups/999/snapshot?lane=history&next=5",
				"a group's lane with no rows": fmt.Sprintf("/v1/groups/%d/snapshot?lane=history&next=5", g.ID),
				"a lane nobody holds":         fmt.Sprintf("/v1/groups/%d/snapshot?lane=tail&next=5", g.ID),
			} {
				r := h.do("PUT", path, h.token, 7, bytes.NewReader(body))
				require.Contains(t, []int{http.StatusNotFound, http.StatusConflict}, r.status, "%s: %s", name, r.body)
				require.Empty(t, h.files(), "%s: no file is left", name)
			}

			gl := h.laneGrant(h.token, lease.LaneTail)
			snap := fmt.Sprintf("/v1/groups/%d/snapshot?lane=tail", g.ID)
			require.Equal(t, http.StatusOK, h.do("PUT", snap+"&next=50", h.token, gl.Token, bytes.NewReader(gz(t, "at 50"))).status)
			current := h.files()
			require.Len(t, current, 1)
			for name, c := range map[string]struct {
				token  string
				lt     int64
				next   int
				status int
			}{
				"older":         {h.token, gl.Token, 40, http.StatusConflict},
				"another node":  {h.token2, gl.Token, 60, http.StatusConflict},
				"a wrong token": {h.token, gl.Token + 1, 60, http.StatusConflict},
			} {
				r := h.do("PUT", fmt.Sprintf("%s&next=%d", snap, c.next), c.token, c.lt, bytes.NewReader(body))
				require.Equal(t, c.status, r.status, "%s: %s", name, r.body)
				require.Equal(t, current, h.files(), "%s: only the current file is there", name)
			}

			// The fence is checked before the body is read at all.
			req := httptest.NewRequestWithContext(t.Context(), "PUT", "/v1/groups/999/snapshot?lane=tail&next=5", nil)
			cb := &countingBody{r: bytes.NewReader(bytes.Repeat(body, 1000))}
			req.Body = io.NopCloser(cb)
			req.Header.Set("Authorization", "Bearer "+h.token)
			req.Header.Set("Lease-Token", "1")
			rec := httptest.NewRecorder()
			h.srv.ServeHTTP(rec, req)
			require.Equal(t, http.StatusNotFound, rec.Code)
			require.Zero(t, cb.n.Load(), "not a byte of a refused upload is read")
		})
	})
}

// Defect 2: a failed upload (not gzip, over the limit, cut by the client)
// leaves no file, and a lane has at most its current file and the one
// being written.
func TestSnapshotFailedUploadsLeaveNothing(t *testing.T) {
	t.Parallel()
	eachSnapStore(t, func(t *testing.T, snapStore func(*testing.T, *coordinator.Config)) {
		h := newHarness(t, backends[0].URL(t), both(t, snapStore, func(c *coordinator.Config) { c.MaxSnapshot = 64 << 10 }))
		g := h.group("o", true, 1, 200, lease.LaneTail)
		gl := h.laneGrant(h.token, lease.LaneTail)
		snap := fmt.Sprintf("/v1/groups/%d/snapshot?lane=tail", g.ID)
		require.Equal(t, http.StatusOK, h.do("PUT", snap+"&next=50", h.token, gl.Token, bytes.NewReader(gz(t, "at 50"))).status)
		current := h.files()

		r := h.do("PUT", snap+"&next=60", h.token, gl.Token, strings.NewReader("not gzip"))
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, current, h.files())
		r = h.do("PUT", snap+"&next=60", h.token, gl.Token, bytes.NewReader(make([]byte, 65<<10)))
		require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
		require.Equal(t, current, h.files())
		// Unknown length: the limit is found while reading.
		r = h.do("PUT", snap+"&next=60", h.token, gl.Token, io.MultiReader(bytes.NewReader(make([]byte, 65<<10))))
		require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
		require.Equal(t, current, h.files())

		// A client that gives up half-way.
		pr, pw := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequestWithContext(t.Context(), "PUT", h.http.URL+snap+"&next=60", pr)
			req.Header.Set("Authorization", "Bearer "+h.token)
			req.Header.Set("Lease-Token", fmt.Sprint(gl.Token))
			if resp, err := h.http.Client().Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		_, err := pw.Write(gz(t, strings.Repeat("half ", 1000))[:10])
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(h.files()) == 2 }, 5*time.Second, 5*time.Millisecond, "the upload is being written")
		pw.CloseWithError(io.ErrUnexpectedEOF)
		<-done
		require.Eventually(t, func() bool { return len(h.files()) == 1 }, 5*time.Second, 5*time.Millisecond)
		require.Equal(t, current, h.files(), "a cut upload leaves nothing")

		// Two uploads of the lane at once: the second waits for the first, so
		// the lane never has more than its current file and one being written.
		put := func(next int, body io.Reader) chan reply {
			ch := make(chan reply, 1)
			go func() {
				req, _ := http.NewRequestWithContext(t.Context(), "PUT", fmt.Sprintf("%s%s&next=%d", h.http.URL, snap, next), body)
				req.Header.Set("Authorization", "Bearer "+h.token)
				req.Header.Set("Lease-Token", fmt.Sprint(gl.Token))
				resp, err := h.http.Client().Do(req)
				if err != nil {
					ch <- reply{status: -1}
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				ch <- reply{status: resp.StatusCode, body: b}
			}()
			return ch
		}
		first, second := gz(t, "first at 70"), gz(t, "second at 80")
		pr1, pw1 := io.Pipe()
		pr2, pw2 := io.Pipe()
		a := put(70, pr1)
		_, err = pw1.Write(first[:10])
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(h.files()) == 2 }, 5*time.Second, 5*time.Millisecond)
		b := put(80, pr2)
		go pw2.Write(second) // the server reads none of it yet
		time.Sleep(100 * time.Millisecond)
		require.Len(t, h.files(), 2, "the second upload waits: current + one being written")
		_, err = pw1.Write(first[10:])
		require.NoError(t, err)
		pw1.Close()
		require.Equal(t, http.StatusOK, (<-a).status)
		pw2.Close()
		rb := <-b
		require.Equal(t, http.StatusOK, rb.status, "%s", rb.body)
		require.Len(t, h.files(), 1, "a stored upload removes the lane's other files")
		got := h.do("GET", snap, h.token, gl.Token, nil)
		require.Equal(t, second, got.body)
		require.Equal(t, "80", got.header.Get("X-Snapshot-Next"))
	})
}

// snapshotChecker is a coordinator.Store that checks snapshots.
type snapshotChecker interface {
	coordinator.Store
	CheckSnapshot(ctx context.Context, g int64, ln lease.Lane, f lease.Fence) (grouplease.SnapshotCheck, error)
}

// racyStore runs a hook once, right after the next snapshot check of the
// coordinator's own pre-check passes.
type racyStore struct {
	snapshotChecker
	mu   sync.Mutex
	hook func()
}

func (s *racyStore) fire() {
	s.mu.Lock()
	hook := s.hook
	s.hook = nil
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
}

func (s *racyStore) CheckSnapshot(ctx context.Context, g int64, ln lease.Lane, f lease.Fence) (grouplease.SnapshotCheck, error) {
	chk, err := s.snapshotChecker.CheckSnapshot(ctx, g, ln, f)
	s.fire()
	return chk, err
}

// Defect 3: a holder fenced out between the check and the write, uploading
// at the same next, never replaces the current snapshot's bytes.
func TestSnapshotRefusedNeverReplacesCurrent(t *testing.T) {
	t.Parallel()
	eachSnapStore(t, func(t *testing.T, snapStore func(*testing.T, *coordinator.Config)) {
		eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
			var racy *racyStore
			h := newHarness(t, url(t), both(t, snapStore, func(c *coordinator.Config) {
				racy = &racyStore{snapshotChecker: c.Store.(snapshotChecker)}
				c.Store = racy
			}))
			g := h.group("o", true, 1, 200, lease.LaneTail)
			gl := h.laneGrant(h.token, lease.LaneTail)
			snap := fmt.Sprintf("/v1/groups/%d/snapshot?lane=tail", g.ID)
			good := gz(t, "the window at 50")
			require.Equal(t, http.StatusOK, h.do("PUT", snap+"&next=50", h.token, gl.Token, bytes.NewReader(good)).status)

			// Between the check of A's next upload and its write, A loses the
			// lane and B is granted it.
			var gl2 grouplease.GroupLease
			racy.mu.Lock()
			racy.hook = func() {
				require.NoError(t, h.store.ReleaseLane(context.Background(), g.ID, lease.LaneTail, lease.Fence{Node: "edge-1", Token: gl.Token}))
				var err error
				gl2, err = h.store.GrantLane(context.Background(), "edge-2", lease.LaneTail, time.Minute)
				require.NoError(t, err)
			}
			racy.mu.Unlock()
			refused := gz(t, strings.Repeat("refused bytes ", 100))
			r := h.do("PUT", snap+"&next=50", h.token, gl.Token, bytes.NewReader(refused))
			require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
			require.NotZero(t, gl2.Token)

			r = h.do("GET", snap, h.token2, gl2.Token, nil)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.Equal(t, good, r.body, "the current snapshot keeps its bytes")
			require.Len(t, h.files(), 1, "the refused upload left nothing")
		})
	})
}

// Defect 10: next is at least 1 and at most the lane's planned end + 1; an
// admin can reset a lane's snapshot.
func TestSnapshotBoundsAndReset(t *testing.T) {
	t.Parallel()
	eachSnapStore(t, func(t *testing.T, snapStore func(*testing.T, *coordinator.Config)) {
		eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
			h := newHarness(t, url(t), both(t, snapStore, nil))
			g := h.group("o", true, 1, 200, lease.LaneTail)
			gl := h.laneGrant(h.token, lease.LaneTail)
			snap := fmt.Sprintf("/v1/groups/%d/snapshot?lane=tail", g.ID)
			put := func(next string) reply {
				return h.do("PUT", snap+"&next="+next, h.token, gl.Token, bytes.NewReader(gz(t, "w")))
			}
			for _, next := range []string{"0", "-1", "202", "9223372036854775807", "9223372036854775808", "1e3", ""} {
				r := put(next)
				require.Equal(t, http.StatusBadRequest, r.status, "next=%s: %s", next, r.body)
				require.Contains(t, string(r.body), `"code":"invalid"`)
			}
			require.Empty(t, h.files())
			r := put("201")
			require.Equal(t, http.StatusOK, r.status, "the end of the last planned range + 1: %s", r.body)
			require.Equal(t, http.StatusConflict, put("200").status, "older")

			reset := fmt.Sprintf("/v1/groups/%d/snapshot?lane=tail", g.ID)
			require.Equal(t, http.StatusForbidden, h.do("DELETE", reset, h.token, 0, nil).status, "a node cannot reset")
			require.Equal(t, http.StatusBadRequest, h.do("DELETE", reset+"x", adminToken, 0, nil).status)
			require.Equal(t, http.StatusNotFound, h.do("DELETE", "/v1/groups/999/snapshot?lane=tail", adminToken, 0, nil).status)
			r = h.do("DELETE", reset, adminToken, 0, nil)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.JSONEq(t, `{"reset": true, "next": 201}`, string(r.body))
			require.Empty(t, h.files(), "the reset snapshot's file is removed")
			require.Equal(t, http.StatusNotFound, h.do("GET", snap, h.token, gl.Token, nil).status)
			r = h.do("DELETE", reset, adminToken, 0, nil)
			require.JSONEq(t, `{"reset": false, "next": null}`, string(r.body))
			require.Equal(t, http.StatusOK, put("10").status, "after a reset, a snapshot may start anywhere")
		})
	})
}
