package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
)

// serveConfig is how startServe runs `coordinator serve`. The zero value
// of every field but DB means its default.
type serveConfig struct {
	DB      string   // --db, such as a postgres:// URL from postgres.schema; default: SQLite in Data
	Data    string   // --data; default: a new temporary directory, removed by Stop
	Sources []string // --source values; default: none, so serve's synthetic source
	Args    []string // more flags of serve, such as --lease-ttl 30s
	Env     []string // more environment, KEY=VALUE
}

// serveProc is the built coordinator binary running `serve` as a process
// of its own, on a free loopback port.
type serveProc struct {
	URL        string // the node and admin API, http://127.0.0.1:PORT
	AdminToken string // EDGEINDEX_ADMIN_TOKEN, set for serve and CLI
	PID        int
	Data       string // the data directory
	Log        string // serve's stderr, kept in a temporary file until Stop

	cfg     serveConfig
	bin     string
	env     []string
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the process has been waited for
	waitErr error
	tmpData bool
	state   *os.ProcessState // once stopped
	pprof   string           // --pprof's address, with -serve-profiles
}

// CPU is the user and system time serve took, once Stop has returned.
func (p *serveProc) CPU() time.Duration {
	if p.state == nil {
		return 0
	}
	return p.state.UserTime() + p.state.SystemTime()
}

var builtCoordinator struct {
	once sync.Once
	path string
	err  error
}

// coordinatorBinary builds cmd/coordinator of the repository bench
// replaces (go build -o, in the repository's own module, as an operator
// builds it) once a run, into a temporary directory, and returns its path.
// Call removeCoordinatorBinary at the end of the run.
func coordinatorBinary(ctx context.Context) (string, error) {
	b := &builtCoordinator
	b.once.Do(func() {
		b.path, b.err = buildCoordinator(ctx)
	})
	return b.path, b.err
}

func buildCoordinator(ctx context.Context) (string, error) {
	root, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/edgeindex/edgeindex").Output()
	if err != nil {
		return "", fmt.Errorf("find the repository: %w", err)
	}
	dir, err := os.MkdirTemp("", "edgeindex-bench-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "coordinator")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/coordinator")
	build.Dir = strings.TrimSpace(string(root))
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./cmd/coordinator: %w: %s", err, bytes.TrimSpace(out))
	}
	return bin, nil
}

// removeCoordinatorBinary removes what coordinatorBinary built, if it did.
func removeCoordinatorBinary() {
	if p := builtCoordinator.path; p != "" {
		os.RemoveAll(filepath.Dir(p))
	}
}

// startServe builds the coordinator (once a run), starts `serve` with
// cfg on 127.0.0.1:0 and waits until its /readyz answers 200. Stop ends
// it; on an error nothing is left running.
func startServe(ctx context.Context, cfg serveConfig) (_ *serveProc, err error) {
	bin, err := coordinatorBinary(ctx)
	if err != nil {
		return nil, err
	}
	p := &serveProc{cfg: cfg, bin: bin, Data: cfg.Data, exited: make(chan struct{})}
	if p.Data == "" {
		if p.Data, err = os.MkdirTemp("", "edgeindex-bench-data-"); err != nil {
			return nil, err
		}
		p.tmpData = true
	}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	if p.AdminToken, err = randomHex(); err != nil {
		return nil, err
	}
	p.env = append(append(os.Environ(), "EDGEINDEX_ADMIN_TOKEN="+p.AdminToken), cfg.Env...)
	addr, err := p.launch()
	if err != nil {
		return nil, err
	}
	p.URL = "http://" + addr
	return p, p.awaitReady(ctx, time.Minute)
}

// launch starts serve, its stderr going to p.Log, and returns the address
// its "coordinator listening" line gives.
func (p *serveProc) launch() (string, error) {
	args := append([]string{"serve", "--addr", "127.0.0.1:0"}, p.cli().where()...)
	if serveProfiles != "" {
		var err error
		if p.pprof, err = freeAddr(); err != nil {
			return "", err
		}
		args = append(args, "--pprof", p.pprof)
	}
	for _, s := range p.cfg.Sources {
		args = append(args, "--source", s)
	}
	p.cmd = exec.Command(p.bin, append(args, p.cfg.Args...)...)
	p.cmd.Env = p.env
	logf, err := os.CreateTemp("", "edgeindex-bench-serve-*.log")
	if err != nil {
		return "", err
	}
	p.Log = logf.Name()
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return "", err
	}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return "", fmt.Errorf("start coordinator serve: %w", err)
	}
	p.PID = p.cmd.Process.Pid
	addrs := make(chan string, 1)
	go func() {
		copyLog(stderr, logf, addrs)
		logf.Close()
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case a := <-addrs:
		return a, nil
	case <-p.exited:
		return "", fmt.Errorf("coordinator serve exited before listening: %v: %s", p.waitErr, p.logTail())
	case <-time.After(2 * time.Minute):
		return "", fmt.Errorf("coordinator serve did not listen within 2 minutes: %s", p.logTail())
	}
}

var listeningLine = regexp.MustCompile(`msg="coordinator listening" addr=(\S+)`)

// copyLog copies serve's log to w until it ends, sending the address of
// its listening line to addrs.
func copyLog(r io.Reader, w io.Writer, addrs chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	found := false
	for sc.Scan() {
		fmt.Fprintln(w, sc.Text())
		if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil && !found {
			found = true
			addrs <- m[1]
		}
	}
	io.Copy(w, r) // a line past the scanner's bound
}

// logTail returns the end of serve's log, for an error.
func (p *serveProc) logTail() string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// awaitReady polls /readyz until it answers 200, for at most within: a
// request that never gets its answer ends then too.
func (p *serveProc) awaitReady(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		rctx, cancel := context.WithDeadline(ctx, deadline)
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, p.URL+"/readyz", nil)
		if err != nil {
			cancel()
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("coordinator serve exited: %v: %s", p.waitErr, p.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("coordinator serve: /readyz not ready within %s (last: %v)", within, err)
		}
	}
}

// cli is the coordinator's command line against serve's --db and --data,
// with its environment.
func (p *serveProc) cli() coordinatorCLI {
	return coordinatorCLI{bin: p.bin, env: p.env, db: p.cfg.DB, data: p.Data}
}

// CLI runs the coordinator's command args (such as "range", "add", G,
// "1", "100") against serve's --db and --data, with its environment, and
// returns its stdout.
func (p *serveProc) CLI(ctx context.Context, args ...string) (string, error) {
	return p.cli().run(ctx, args...)
}

// coordinatorCLI runs commands of the coordinator binary bin, with env,
// against one --db and --data: serve's (serveProc.cli), or a store's
// before serve starts on it.
type coordinatorCLI struct {
	bin  string
	env  []string
	db   string // --db; empty: none, so SQLite in data
	data string // --data
}

// where is the --data flag, and --db when it is set.
func (c coordinatorCLI) where() []string {
	w := []string{"--data", c.data}
	if c.db != "" {
		w = append(w, "--db", c.db)
	}
	return w
}

// run runs the command args with --data and --db and returns what it
// printed; an error carries its stderr.
func (c coordinatorCLI) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.bin, append(args, c.where()...)...)
	cmd.Env = c.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("coordinator %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), nil
}

// addNode adds the edge node name with `coordinator node add` and returns
// its token.
func (c coordinatorCLI) addNode(ctx context.Context, name string) (string, error) {
	out, err := c.run(ctx, "node", "add", name)
	return strings.TrimSpace(out), err
}

// AddNode adds the edge node name with `coordinator node add` and returns
// its token.
func (p *serveProc) AddNode(ctx context.Context, name string) (string, error) {
	return p.cli().addNode(ctx, name)
}

// Client adds the node name and returns a client for it that tries each
// call attempts times (0: the client's default), with an HTTP transport of
// its own, as a worker process of its own would have.
func (p *serveProc) Client(ctx context.Context, name string, attempts int) (*edge.Client, error) {
	token, err := p.AddNode(ctx, name)
	if err != nil {
		return nil, err
	}
	return nodeClient(p.URL, token, attempts)
}

// nodeClient is an edge.Client of base with token, with an HTTP transport
// of its own, as a worker process of its own would have; attempts 0 means
// the client's default.
func nodeClient(base, token string, attempts int) (*edge.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4
	return edge.NewClient(edge.Config{BaseURL: base, Token: token, HTTP: &http.Client{Transport: tr}, Attempts: attempts})
}

// Clients adds n nodes, prefix1 to prefixN, four `node add` at a time, and
// returns a client for each (see Client).
func (p *serveProc) Clients(ctx context.Context, prefix string, n, attempts int) ([]*edge.Client, error) {
	clients := make([]*edge.Client, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i := range clients {
		g.Go(func() (err error) {
			clients[i], err = p.Client(gctx, fmt.Sprintf("%s%d", prefix, i+1), attempts)
			return err
		})
	}
	return clients, g.Wait()
}

// allDone checks with the admin API that no range of group is left
// pending or leased.
func (p *serveProc) allDone(ctx context.Context, group string) error {
	for _, st := range []lease.State{lease.StatePending, lease.StateLeased} {
		b, err := p.Admin(ctx, fmt.Sprintf("/v1/ranges?group=%s&state=%s&limit=1", group, st))
		if err != nil {
			return err
		}
		var page struct{ Ranges []lease.Range }
		if err := json.Unmarshal(b, &page); err != nil {
			return fmt.Errorf("GET /v1/ranges: %w", err)
		}
		if len(page.Ranges) > 0 {
			return fmt.Errorf("range %d of %s is still %s", page.Ranges[0].ID, group, st)
		}
	}
	return nil
}

// Admin sends GET path (such as "/v1/fleet") to the admin API and returns
// the body of a 200.
func (p *serveProc) Admin(ctx context.Context, path string) ([]byte, error) {
	return adminGet(ctx, p.URL, p.AdminToken, path)
}

// adminHTTP is adminGet's client: an answer that never ends fails after
// a minute.
var adminHTTP = &http.Client{Timeout: time.Minute}

// adminGet sends GET path to the admin API at base with the admin token
// and returns the body of a 200.
func adminGet(ctx context.Context, base, token, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := adminHTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	return b, err
}

// RSS returns the process's resident set size (VmRSS of /proc/PID/status).
func (p *serveProc) RSS() (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v) // "123456 kB"
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseUint(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS line", p.PID)
}

// Stop sends serve SIGTERM and waits for it to exit (SIGKILL after 30 s),
// then removes its log and a temporary data directory. An exit other than 0 is an
// error, with the end of its log. It is safe to call twice.
func (p *serveProc) Stop() error {
	var err error
	if p.cmd != nil && p.cmd.Process != nil {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
		if p.waitErr != nil {
			err = fmt.Errorf("coordinator serve: %w: %s", p.waitErr, p.logTail())
		}
		p.state = p.cmd.ProcessState
		p.cmd = nil
	}
	if p.Log != "" {
		os.Remove(p.Log)
		p.Log = ""
	}
	if p.tmpData {
		err = errors.Join(err, os.RemoveAll(p.Data))
		p.tmpData = false
	}
	return err
}

// serveProfiles is -serve-profiles: a directory to keep CPU profiles of
// serve's process in, from the deployed and the INN lines and -load
// (empty: none).
var serveProfiles string

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// profile keeps seconds of serve's CPU profile from now, through its
// --pprof, as serveProfiles/NAME.pprof; the channel gets the outcome. It
// does nothing but answer nil without -serve-profiles. Seconds below 1
// are 1: pprof reads 0 as its default of 30.
func (p *serveProc) profile(ctx context.Context, name string, seconds int) <-chan error {
	done := make(chan error, 1)
	if p.pprof == "" {
		done <- nil
		return done
	}
	seconds = max(seconds, 1)
	go func() { done <- saveProfile(ctx, p.pprof, filepath.Join(serveProfiles, name+".pprof"), seconds) }()
	return done
}

func saveProfile(ctx context.Context, addr, path string, seconds int) error {
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("serve's profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("serve's profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
