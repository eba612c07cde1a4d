package nzbgettest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeindex/edgeindex/internal/syncbuf"
)

// The control login StartServer gives NZBGet.
const (
	ControlUser     = "nzbget"
	ControlPassword = "tegbzn6789"
)

// Feed is an RSS feed NZBGet subscribes to in server mode.
type Feed struct {
	Name string // "feed1" when empty
	URL  string
	// Interval is the minutes between two fetches; 0 means 1, the
	// shortest NZBGet has. FetchFeed fetches at once.
	Interval int
	// Backlog, when true, has NZBGet treat every item of its first fetch
	// as backlog and queue none of them (Feed.Backlog=yes, NZBGet's
	// default); false queues every item it has not seen before, on the
	// first fetch too.
	Backlog bool
	// Filter is a Feed.Filter in NZBGet's filter language; empty: every
	// item.
	Filter string
}

// ServerConfig configures a Server.
type ServerConfig struct {
	// News is the news server to read articles from (host:port, no TLS,
	// no login), such as an inntest.Reader; MoreNews are further ones of
	// the same level, for an article News lacks.
	News     string
	MoreNews []string
	// Feeds are the feeds NZBGet subscribes to, Feed1 first.
	Feeds []Feed
	// Options are further configuration lines, NAME=VALUE, written after
	// the others.
	Options []string
}

// Server is NZBGet running in server mode (nzbget -s), driven over its
// JSON-RPC control port. StartServer starts it and stops it when the test
// ends.
type Server struct {
	dir    string
	rpc    string
	cmd    *exec.Cmd
	out    *syncbuf.Buffer
	done   chan struct{}
	err    error // the process's exit, once done is closed
	cancel context.CancelFunc
	once   sync.Once
}

// Item is an entry of NZBGet's queue (listgroups) or history (history):
// the fields tests read.
type Item struct {
	NZBID       int
	Kind        string // NZB, or URL while NZBGet fetches a feed item's NZB
	NZBName     string // the queue's name of the NZB
	Name        string // the history's
	URL         string // the enclosure URL it came from, for a feed's items
	NZBFilename string
	DestDir     string
	Category    string
	Status      string // the history's: SUCCESS/..., FAILURE/..., WARNING/...
	FileSizeMB  int
	DupeKey     string
}

// StartServer writes a configuration (the one Download uses, plus the
// control login, the feeds and cfg.Options; queue, history and feed
// history all in a temporary directory) and starts nzbget -s in the
// foreground, returning once its control port answers.
func StartServer(tb testing.TB, cfg ServerConfig) *Server {
	tb.Helper()
	nzbget := NZBGet(tb)
	dir, control, lines := config(tb, append([]string{cfg.News}, cfg.MoreNews...))
	lines = append(lines, "ControlUsername="+ControlUser, "ControlPassword="+ControlPassword)
	for i, f := range cfg.Feeds {
		n := fmt.Sprintf("Feed%d.", i+1)
		name := f.Name
		if name == "" {
			name = fmt.Sprintf("feed%d", i+1)
		}
		backlog := "no"
		if f.Backlog {
			backlog = "yes"
		}
		lines = append(lines, n+"Name="+name, n+"URL="+f.URL, n+"Interval="+strconv.Itoa(max(f.Interval, 1)),
			n+"Backlog="+backlog, n+"PauseNzb=no", n+"Filter="+f.Filter)
	}
	lines = append(lines, cfg.Options...)
	confFile := filepath.Join(dir, "nzbget.conf")
	if err := os.WriteFile(confFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		tb.Fatalf("nzbgettest: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{dir: dir, rpc: fmt.Sprintf("http://127.0.0.1:%d/jsonrpc", control), out: &syncbuf.Buffer{}, done: make(chan struct{}), cancel: cancel}
	s.cmd = exec.CommandContext(ctx, nzbget, "-s", "-c", confFile, "-o", "OutputMode=log")
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		cancel()
		tb.Fatalf("nzbgettest: starting nzbget -s: %v", err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	tb.Cleanup(func() {
		s.Shutdown(tb)
		if tb.Failed() {
			tb.Logf("NZBGet's log:\n%s", s.Log())
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		var version string
		err := s.Call(context.Background(), "version", &version)
		if err == nil {
			break
		}
		select {
		case <-s.done:
			tb.Fatalf("nzbgettest: nzbget -s exited: %v\n%s", s.err, s.Log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("nzbgettest: nzbget's control port did not answer: %v\n%s", err, s.Log())
		}
	}
	return s
}

// Dir is the server's MainDir; DestDir is Dir()/dst.
func (s *Server) Dir() string { return s.dir }

// Log is NZBGet's output and its log file so far.
func (s *Server) Log() string {
	logFile, _ := os.ReadFile(filepath.Join(s.dir, "nzbget.log"))
	return s.out.String() + "\n--- nzbget.log:\n" + string(logFile)
}

// rpcError is a JSON-RPC error NZBGet answered with.
type rpcError struct {
	Name    string `json:"name"`
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Call calls a JSON-RPC method with params and decodes its result into
// result (which may be nil).
func (s *Server) Call(ctx context.Context, method string, result any, params ...any) error {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"version": "1.1", "method": method, "params": params})
	if err != nil {
		return fmt.Errorf("nzbget %s: %w", method, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", s.rpc, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("nzbget %s: %w", method, err)
	}
	req.SetBasicAuth(ControlUser, ControlPassword)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("nzbget %s: %w", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("nzbget %s: %w", method, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("nzbget %s: %s: %s", method, resp.Status, b)
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		return fmt.Errorf("nzbget %s: %w: %s", method, err, b)
	}
	if answer.Error != nil {
		return fmt.Errorf("nzbget %s: error %d %s: %s", method, answer.Error.Code, answer.Error.Name, answer.Error.Message)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(answer.Result, result); err != nil {
		return fmt.Errorf("nzbget %s: %w: %s", method, err, answer.Result)
	}
	return nil
}

// call is Call that fails the test on an error.
func (s *Server) call(tb testing.TB, method string, result any, params ...any) {
	tb.Helper()
	if err := s.Call(context.Background(), method, result, params...); err != nil {
		tb.Fatalf("nzbgettest: %v\n%s", err, s.Log())
	}
}

// Queue lists the items in NZBGet's queue (listgroups).
func (s *Server) Queue(tb testing.TB) []Item {
	tb.Helper()
	var items []Item
	s.call(tb, "listgroups", &items, 0)
	return items
}

// History lists NZBGet's history (history), hidden items included.
func (s *Server) History(tb testing.TB) []Item {
	tb.Helper()
	var items []Item
	s.call(tb, "history", &items, true)
	return items
}

// FetchFeed has NZBGet fetch feed id (1 for Feed1; 0: every feed) now
// (fetchfeed).
func (s *Server) FetchFeed(tb testing.TB, id int) {
	tb.Helper()
	var ok bool
	s.call(tb, "fetchfeed", &ok, id)
	if !ok {
		tb.Fatalf("nzbgettest: fetchfeed %d answered false", id)
	}
}

// Files returns the SHA-256, in hex, of every file under dir (a history
// item's DestDir), by name.
func Files(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		files[d.Name()] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		tb.Fatalf("nzbgettest: reading %s: %v", dir, err)
	}
	return files
}

// Shutdown asks NZBGet to shut down (shutdown) and waits for it, killing
// it when it has not exited within 15 seconds. It may be called more
// than once; the test's end calls it.
func (s *Server) Shutdown(tb testing.TB) {
	tb.Helper()
	s.once.Do(func() {
		defer s.cancel()
		select {
		case <-s.done:
			return
		default:
		}
		err := s.Call(context.Background(), "shutdown", nil)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			s.cancel()
			<-s.done
			tb.Errorf("nzbgettest: nzbget did not shut down (shutdown: %v); killed", err)
		}
		var exit *exec.ExitError
		if s.err != nil && !errors.As(s.err, &exit) {
			tb.Errorf("nzbgettest: nzbget: %v", s.err)
		}
	})
}
