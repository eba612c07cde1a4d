package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/internal/miniotest"
	"github.com/edgeindex/edgeindex/internal/syncbuf"
	"github.com/edgeindex/edgeindex/internal/testmain"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// TestMain stops the throwaway MinIO, if a test started one, and checks
// that no goroutine leaked.
func TestMain(m *testing.M) { testmain.Main(m) }

// run runs one command against data dir and returns its stdout.
func run(t *testing.T, data string, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	m := NewMain(&out, &errb)
	err := m.Run(t.Context(), append(args, "--data", data))
	return out.String(), err
}

// help, -h and any command's -h print the usage, which names the
// environment the coordinator reads and shows an example.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"serve", "-h"}, {"range", "add", "-h"}} {
		var out bytes.Buffer
		require.NoError(t, NewMain(&out, io.Discard).Run(t.Context(), args), "%q", args)
		for _, v := range []string{"EDGEINDEX_DB", "EDGEINDEX_DATA", "EDGEINDEX_ADMIN_TOKEN", "EDGEINDEX_NNTP_USER", "EDGEINDEX_NNTP_PASS", "Example:"} {
			require.Contains(t, out.String(), v, "%q", args)
		}
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	token, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	token = strings.TrimSpace(token)
	require.Len(t, token, 64, "the token alone, on one line")
	_, err = run(t, data, "node", "add", "edge-1")
	require.Error(t, err)

	out, err := run(t, data, "group", "add", "alt.binaries.test", "--range-size", "1000", "--chunk-size", "100")
	require.NoError(t, err)
	require.Contains(t, out, "ranges of 1000")
	_, err = run(t, data, "group", "add", "--ordered", "o.g") // flags before the positional too
	require.NoError(t, err)
	out, err = run(t, data, "range", "add", "alt.binaries.test", "1", "2500")
	require.NoError(t, err)
	require.Contains(t, out, "added 3 ranges")
	out, err = run(t, data, "range", "add", "o.g", "5000", "5999", "--lane", "tail")
	require.NoError(t, err)
	require.Contains(t, out, "added 1 ranges")
	_, err = run(t, data, "range", "add", "alt.binaries.test", "100", "200")
	require.Error(t, err, "an overlap is refused")
	_, err = run(t, data, "range", "add", "alt.binaries.test", "x", "200")
	require.ErrorIs(t, err, errUsage)
	require.Equal(t, 2, exitCode(err))
	_, err = run(t, data, "range", "add", "alt.binaries.test", "9000", "9100", "--lane", "sideways")
	require.ErrorIs(t, err, errUsage)

	out, err = run(t, data, "status")
	require.NoError(t, err)
	require.Contains(t, out, "alt.binaries.test")
	require.Contains(t, out, "PENDING")
	out, err = run(t, data, "status", "--json")
	require.NoError(t, err)
	var st struct {
		Lanes []struct {
			Group  string           `json:"group"`
			Lane   string           `json:"lane"`
			Ranges map[string]int64 `json:"ranges"`
		} `json:"lanes"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Len(t, st.Lanes, 2)
	require.Equal(t, int64(3), st.Lanes[0].Ranges["pending"])
	require.Equal(t, "tail", st.Lanes[1].Lane)

	out, err = run(t, data, "node", "list")
	require.NoError(t, err)
	require.Contains(t, out, "edge-1")
	_, err = run(t, data, "node", "rm", "edge-1")
	require.NoError(t, err)
	_, err = run(t, data, "node", "rm", "edge-1")
	require.Error(t, err)
	_, err = run(t, data, "range", "retry", "alt.binaries.test", "--failed")
	require.NoError(t, err)
	_, err = run(t, data, "frobnicate")
	require.ErrorIs(t, err, errUsage)
}

func TestServe(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	token, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	_, err = run(t, data, "group", "add", "g", "--range-size", "100", "--chunk-size", "50")
	require.NoError(t, err)
	_, err = run(t, data, "range", "add", "g", "1", "100")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	addr := make(chan string, 1)
	m := NewMain(&bytes.Buffer{}, &bytes.Buffer{})
	m.Ready = func(a string) { addr <- a }
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data}) }()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatal(err)
	}

	admin, err := os.ReadFile(filepath.Join(data, "admin.token"))
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(data, "admin.token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	req, _ := http.NewRequest("POST", base+"/v1/lease", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	req, _ = http.NewRequest("GET", base+"/v1/ranges", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(admin)))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// A busy port is a synchronous error.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, err = run(t, data, "serve", "--addr", l.Addr().String())
	require.ErrorContains(t, err, "listen")

	cancel() // SIGTERM
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestSource(t *testing.T) {
	t.Parallel()
	srv, err := nntptest.New(nntptest.Config{User: "user", Pass: "right", AuthFirst: true})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	dead.Close()

	for _, c := range []struct {
		url   string
		conns int
		want  string
		usage bool
	}{
		{url: "nntp://user:secret@", want: "host", usage: true},
		{url: "nntp://user:secret@" + srv.Addr() + "/?conns=x", want: "conns", usage: true},
		{url: "nntp://user:secret@" + srv.Addr(), conns: -1, want: "--nntp-conns", usage: true},
		{url: "nntp://user:secret@" + srv.Addr(), want: "authentication failed"},
		{url: "nntp://user:secret@" + deadAddr, want: "refused"},
		{url: "ftp://x", want: "synthetic or nntp://", usage: true},
	} {
		m := NewMain(io.Discard, io.Discard)
		m.Sources, m.NNTPConns = sourceFlags{c.url}, c.conns
		_, err := m.sources(t.Context(), nil)
		require.Error(t, err, c.url)
		require.Equal(t, c.usage, errors.Is(err, errUsage), "%s: %v", c.url, err)
		require.ErrorContains(t, err, c.want)
		require.NotContains(t, err.Error(), "secret", "the password is never shown")
		require.NotContains(t, err.Error(), "\n", "one sentence")
	}

	m := NewMain(io.Discard, io.Discard)
	m.Sources, m.NNTPConns = sourceFlags{"nntp://user:right@" + srv.Addr()}, 3
	s, err := m.sources(t.Context(), nil)
	require.NoError(t, err)
	require.Equal(t, 3, s.conns, "--nntp-conns bounds the prefetcher's fetches")
	require.NoError(t, s.close())
	m.Sources = nil
	s, err = m.sources(t.Context(), nil)
	require.NoError(t, err)
	require.NotNil(t, s.ChunkSource)
}

func TestDemo(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m := NewMain(&out, &bytes.Buffer{})
	defer m.Close()
	res, err := m.runDemo(t.Context(), t.TempDir(), 30_000, 3, 4_000, &out, nil)
	require.NoError(t, err)
	require.Equal(t, int64(8), res.Ranges)
	require.Equal(t, int64(30_000), res.Headers, "one overview line per synthetic article")
	require.Positive(t, res.Binaries)
	require.Equal(t, res.Binaries, res.Complete, "every synthetic binary has all its parts once merged")
	require.Contains(t, out.String(), "30000/30000 articles")
	require.Contains(t, out.String(), "8/8 ranges")

	_, err = run(t, t.TempDir(), "demo", "--articles", "0")
	require.ErrorIs(t, err, errUsage)
}

// serveStatus reads status --json while serve runs.
func serveStatus(t *testing.T, data string) (plans []struct {
	Low, High, Lag, TailNext, HistoryNext, HistoryEnd int64
	Polled                                            bool
}) {
	t.Helper()
	out, err := run(t, data, "status", "--json")
	require.NoError(t, err)
	var st struct {
		Plans []struct {
			Low, High, Lag, TailNext, HistoryNext, HistoryEnd int64
			Polled                                            bool
		} `json:"plans"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	return st.Plans
}

// TestServePlansFromNNTP runs serve on the in-repo NNTP server: the planner
// polls GROUP, plans history and the tail, and follows new posts.
func TestServePlansFromNNTP(t *testing.T) {
	t.Parallel()
	srv, err := nntptest.New(nntptest.Config{Groups: []nntptest.Group{{Name: "alt.test", Lines: nntptest.Lines("alt.test", 1, 1000)}}})
	require.NoError(t, err)
	defer srv.Close()
	data := t.TempDir()
	_, err = run(t, data, "group", "add", "alt.test", "--range-size", "100", "--chunk-size", "50", "--plan", "tail,history", "--margin", "10")
	require.NoError(t, err)
	_, err = run(t, data, "group", "add", "bad", "--plan", "sideways")
	require.ErrorIs(t, err, errUsage)
	_, err = run(t, data, "group", "plan", "alt.test", "--plan", "tail", "--margin", "-1")
	require.ErrorIs(t, err, errUsage)

	serve := startServe(t, data, "--source", srv.URL(), "--poll", "20ms", "--nntp-conns", "2")
	require.Eventually(t, func() bool {
		p := serveStatus(t, data)
		return len(p) == 1 && p[0].Polled && p[0].HistoryNext == 991
	}, 10*time.Second, 20*time.Millisecond, "history planned 1..990 from the first poll")
	p := serveStatus(t, data)[0]
	require.Equal(t, int64(1), p.Low)
	require.Equal(t, int64(1000), p.High)
	require.Equal(t, int64(991), p.TailNext, "the newest 10 are left for later")

	srv.Update(func(c *nntptest.Config) { c.Groups[0].Lines = nntptest.Lines("alt.test", 1, 1500) })
	require.Eventually(t, func() bool {
		p := serveStatus(t, data)
		return p[0].High == 1500 && p[0].TailNext == 1491
	}, 10*time.Second, 20*time.Millisecond, "new posts are planned on the tail up to high − margin")
	require.LessOrEqual(t, srv.Stats().MaxOpen, 2, "--nntp-conns bounds the connections")
	serve.stop(t)
}

// serving is a serve command running in the background.
type serving struct {
	base   string
	stderr *syncbuf.Buffer
	cancel context.CancelFunc
	done   chan error
}

// startServe runs serve on 127.0.0.1:0 with data and args.
func startServe(t *testing.T, data string, args ...string) *serving {
	t.Helper()
	return startServeWith(t, data, func(*Main) {}, args...)
}

// startServeWith is startServe with a Main that set has changed.
func startServeWith(t *testing.T, data string, set func(*Main), args ...string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	s := &serving{stderr: &syncbuf.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	addr := make(chan string, 1)
	m := NewMain(io.Discard, s.stderr)
	m.Ready = func(a string) { addr <- a }
	set(m)
	go func() {
		s.done <- m.Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, args...))
	}()
	select {
	case a := <-addr:
		s.base = "http://" + a
	case err := <-s.done:
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", s.stderr)
		}
	})
	return s
}

// stop stops serve as SIGTERM does.
func (s *serving) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case err := <-s.done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	http.DefaultClient.CloseIdleConnections()
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return info.Mode().Perm()
}

// Defect 12: the data directory is 0700, the database and token files 0600,
// tightened on start.
func TestPermissions(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.Mkdir(data, 0o755))
	require.NoError(t, os.Chmod(data, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(data, "admin.token"), []byte("an-old-token\n"), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(data, "admin.token"), 0o644))
	_, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	db := filepath.Join(data, "edgeindex.db")
	require.NoError(t, os.Chmod(db, 0o644)) // as an older version left it

	s := startServe(t, data)
	require.Equal(t, os.FileMode(0o700), mode(t, data), "the data directory")
	require.Equal(t, os.FileMode(0o600), mode(t, filepath.Join(data, "admin.token")), "an existing admin.token")
	for _, f := range []string{"edgeindex.db", "edgeindex.db-wal", "edgeindex.db-shm"} {
		if _, err := os.Stat(filepath.Join(data, f)); err == nil {
			require.Equal(t, os.FileMode(0o600), mode(t, filepath.Join(data, f)), f)
		}
	}
	require.Equal(t, os.FileMode(0o600), mode(t, filepath.Join(data, "coordinator.id")))
	s.stop(t)

	// A first start in a new directory.
	fresh := filepath.Join(t.TempDir(), "fresh")
	s = startServe(t, fresh)
	require.Equal(t, os.FileMode(0o700), mode(t, fresh))
	require.Equal(t, os.FileMode(0o600), mode(t, filepath.Join(fresh, "edgeindex.db")))
	require.Equal(t, os.FileMode(0o600), mode(t, filepath.Join(fresh, "admin.token")))
	s.stop(t)
}

// claimOwners reads who claimed the chunks of the database in data.
func claimOwners(t *testing.T, data string) []string {
	t.Helper()
	st, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(data, "edgeindex.db"), sqlstore.Config{})
	require.NoError(t, err)
	defer st.Close()
	var owners []string
	require.NoError(t, st.DB().SelectContext(t.Context(), &owners, "SELECT DISTINCT owner FROM chunk_claims ORDER BY owner"))
	return owners
}

// leaseAndWait leases a range through serve and waits until owner claimed
// chunks.
func leaseAndWait(t *testing.T, s *serving, token, data, owner string) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.base+"/v1/lease", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Eventually(t, func() bool {
		owners := claimOwners(t, data)
		return len(owners) > 0 && (owner == "" || slices.Contains(owners, owner))
	}, 10*time.Second, 20*time.Millisecond)
}

// Defect 5: the owner of chunk claims is stable across restarts and --addr
// changes, and settable with --id.
func TestServeID(t *testing.T) {
	t.Parallel()
	setup := func() (data, token string) {
		data = t.TempDir()
		token, err := run(t, data, "node", "add", "edge-1")
		require.NoError(t, err)
		_, err = run(t, data, "group", "add", "g", "--range-size", "100", "--chunk-size", "50")
		require.NoError(t, err)
		_, err = run(t, data, "range", "add", "g", "1", "300")
		require.NoError(t, err)
		return data, strings.TrimSpace(token)
	}

	data, token := setup()
	s := startServe(t, data)
	leaseAndWait(t, s, token, data, "")
	s.stop(t)
	first := claimOwners(t, data)
	require.Len(t, first, 1)
	kept, err := os.ReadFile(filepath.Join(data, "coordinator.id"))
	require.NoError(t, err)
	require.Equal(t, first[0], strings.TrimSpace(string(kept)), "the identity is kept in the data directory")
	require.NotContains(t, first[0], "127.0.0.1", "no address in the identity")
	s = startServe(t, data) // another port: the same identity
	require.Contains(t, s.stderr.String(), "id="+first[0])
	s.stop(t)

	data, token = setup()
	s = startServe(t, data, "--id", "coord-a")
	require.Contains(t, s.stderr.String(), "id=coord-a")
	leaseAndWait(t, s, token, data, "coord-a")
	s.stop(t)
	require.Equal(t, []string{"coord-a"}, claimOwners(t, data))

	for _, bad := range []string{"has space", strings.Repeat("x", 201)} {
		_, err = run(t, data, "serve", "--addr", "127.0.0.1:0", "--id", bad)
		require.ErrorIs(t, err, errUsage, "--id %q", bad)
	}
}

// Defect 10: an operator resets a lane's snapshot.
func TestSnapshotReset(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	_, err := run(t, data, "group", "add", "o", "--ordered", "--range-size", "100")
	require.NoError(t, err)
	_, err = run(t, data, "range", "add", "o", "1", "100", "--lane", "tail")
	require.NoError(t, err)

	// A snapshot far past the lane's end, as one stored before next was bounded.
	st, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(data, "edgeindex.db"), sqlstore.Config{})
	require.NoError(t, err)
	gl, err := st.GrantLane(t.Context(), "edge-1", lease.LaneTail, time.Minute)
	require.NoError(t, err)
	f := lease.Fence{Node: "edge-1", Token: gl.Token}
	_, err = st.DB().ExecContext(t.Context(), "UPDATE lanes SET snap_next = ?, snap_size = 3, snap_token = ? WHERE group_id = ? AND lane = 'tail'",
		int64(math.MaxInt64), gl.Token, gl.Group.ID)
	require.NoError(t, err)
	dir := filepath.Join(data, "snapshots")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	file := filepath.Join(dir, fmt.Sprintf("%d-tail-%d-%d.gz", gl.Group.ID, int64(math.MaxInt64), gl.Token))
	require.NoError(t, os.WriteFile(file, []byte("old"), 0o600))
	require.NoError(t, st.Close())

	_, err = run(t, data, "snapshot", "reset", "o", "--lane", "sideways")
	require.ErrorIs(t, err, errUsage)
	_, err = run(t, data, "snapshot", "reset")
	require.ErrorIs(t, err, errUsage)
	_, err = run(t, data, "snapshot", "reset", "nope", "--lane", "tail")
	require.Error(t, err)
	out, err := run(t, data, "snapshot", "reset", "o", "--lane", "tail")
	require.NoError(t, err)
	require.Contains(t, out, fmt.Sprintf("snapshot at %d reset", int64(math.MaxInt64)))
	require.NoFileExists(t, file)
	out, err = run(t, data, "snapshot", "reset", "o", "--lane", "tail")
	require.NoError(t, err)
	require.Contains(t, out, "no snapshot")

	st, err = sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(data, "edgeindex.db"), sqlstore.Config{})
	require.NoError(t, err)
	defer st.Close()
	chk, err := st.CheckSnapshot(t.Context(), gl.Group.ID, lease.LaneTail, f)
	require.NoError(t, err)
	require.Nil(t, chk.Current, "the lane has no snapshot; the next upload may start anywhere")
}

// serve --storage keeps the spool in the bucket (nothing on disk), streams
// from it, and logs the URL without its secret; a bad --storage is a usage
// error that shows no secret either.
func TestServeStorage(t *testing.T) {
	t.Parallel()
	data, storage := t.TempDir(), miniotest.URL(t)
	u, err := url.Parse(storage)
	require.NoError(t, err)
	secret, _ := u.User.Password()
	token, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	_, err = run(t, data, "group", "add", "g", "--range-size", "100", "--chunk-size", "50")
	require.NoError(t, err)
	_, err = run(t, data, "range", "add", "g", "1", "100")
	require.NoError(t, err)

	s := startServe(t, data, "--storage", storage)
	do := func(method, path string, leaseToken int64) *http.Response {
		req, _ := http.NewRequest(method, s.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
		if leaseToken != 0 {
			req.Header.Set("Lease-Token", fmt.Sprint(leaseToken))
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}
	resp := do("POST", "/v1/lease", 0)
	var l lease.Lease
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&l))
	resp.Body.Close()
	resp = do("GET", fmt.Sprintf("/v1/ranges/%d/stream", l.Range.ID), l.Token)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	rd, err := edgeframe.NewReader(bytes.NewReader(body), edgeframe.Config{})
	require.NoError(t, err)
	var chunks int
	for {
		f, err := rd.Next()
		require.NoError(t, err)
		if f.Type == edgeframe.TypeEnd {
			break
		}
		chunks++
	}
	require.Equal(t, 2, chunks)

	root, err := blobstore.OpenURL(t.Context(), storage)
	require.NoError(t, err)
	defer root.Close()
	var keys []string
	require.NoError(t, root.List(t.Context(), "spool/", func(info blobstore.Info) error {
		keys = append(keys, info.Key)
		return nil
	}))
	require.Equal(t, []string{fmt.Sprintf("spool/%d/1-50.gz", l.Range.ID), fmt.Sprintf("spool/%d/51-100.gz", l.Range.ID)}, keys)
	for _, dir := range []string{"spool", "corpus", "snapshots"} {
		_, err := os.Stat(filepath.Join(data, dir))
		require.ErrorIs(t, err, os.ErrNotExist, "nothing of %s on disk", dir)
	}
	s.stop(t)
	require.Contains(t, s.stderr.String(), `storage="s3://edgeindex:xxxxx@`)
	require.Contains(t, s.stderr.String(), "endpoint=127.0.0.1%3A", "the endpoint is shown")
	require.NotContains(t, s.stderr.String(), secret)

	out, err := run(t, data, "snapshot", "reset", "g", "--lane", "history", "--storage", storage)
	require.NoError(t, err)
	require.Contains(t, out, "had no snapshot")
	for _, bad := range []string{"ftp://bucket", "s3://u:" + secret + "@b"} {
		_, err := run(t, data, "serve", "--addr", "127.0.0.1:0", "--storage", bad)
		require.ErrorIs(t, err, errUsage, bad)
		require.NotContains(t, err.Error(), secret, bad)
	}
	http.DefaultClient.CloseIdleConnections()
}
