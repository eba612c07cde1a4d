package inntest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/textproto"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeindex/edgeindex/internal/quickack"
	"github.com/edgeindex/edgeindex/internal/syncbuf"
)

// Bin is where Debian's inn2 package puts innd, nnrpd, ctlinnd and makedbz.
const Bin = "/usr/lib/news/bin"

// Template is the configuration directory copied into every instance.
const Template = "/etc/news"

// PathHost is the instance's pathhost: the first element of every Path
// header it adds, and the host name in its Xref fields.
const PathHost = "inntest.example.test"

// RequireEnv names the environment variable that, set to 1, turns a skip for
// want of INN into a failure.
const RequireEnv = "EDGEINDEX_REQUIRE_INN"

// startTimeout bounds how long Start waits for innd to answer.
const startTimeout = 30 * time.Second

// Server is a running throwaway innd.
type Server struct {
	dir     string
	innconf string
	addr    string
	env     []string
	out     *syncbuf.Buffer
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error

	mu     sync.Mutex
	posted []string
}

// Available reports why the INN binaries cannot be used, or nil.
func Available() error {
	for _, name := range []string{"innd", "nnrpd", "ctlinnd", "makedbz"} {
		if _, err := os.Stat(filepath.Join(Bin, name)); err != nil {
			return fmt.Errorf("%s is missing (apt-get install inn2; .ci/run shows the workaround its first install needs): %w", filepath.Join(Bin, name), err)
		}
	}
	if _, err := os.Stat(filepath.Join(Template, "inn.conf")); err != nil {
		return fmt.Errorf("no INN configuration to copy: %w", err)
	}
	return nil
}

// Start starts a throwaway innd for the test and stops it, and removes its
// directory, when the test ends. Without INN it skips the test, or fails it
// when EDGEINDEX_REQUIRE_INN=1.
func Start(tb testing.TB) *Server {
	tb.Helper()
	owner, err := runAs()
	if err == nil {
		err = Available()
	}
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("inntest: INN is required (%s=1): %v", RequireEnv, err)
		}
		tb.Skipf("inntest: no INN server to test against: %v", err)
	}
	// Not t.TempDir: as root its parents are 0700 and the news user could not
	// reach it. A short path also keeps the control socket's path well under
	// the 108 bytes a Unix socket address allows.
	dir, err := os.MkdirTemp("", "inntest-")
	if err != nil {
		tb.Fatalf("inntest: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })

	// The test process binds the port and hands the socket to innd (systemd
	// socket activation), so parallel instances never race for a free port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("inntest: %v", err)
	}
	lf, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		tb.Fatalf("inntest: %v", err)
	}
	defer lf.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	s := &Server{
		dir:     dir,
		innconf: filepath.Join(dir, "etc", "inn.conf"),
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		out:     &syncbuf.Buffer{},
		exited:  make(chan struct{}),
	}
	s.env = childEnv(s.innconf)
	if err := s.setup(owner, port); err != nil {
		tb.Fatalf("inntest: setting up INN in %s: %v", dir, err)
	}

	// -d -f: stay in the foreground, news log on stdout. -N: no Perl or
	// Python filters. -c 0: accept articles of any age. -i 0: no limit on
	// connections. LISTEN_PID must be innd's own pid: the shell's, as exec
	// keeps it.
	s.cmd = exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1; export LISTEN_PID LISTEN_FDS; exec "$0" "$@"`,
		filepath.Join(Bin, "innd"), "-d", "-f", "-N", "-c", "0", "-i", "0")
	s.cmd.Dir = dir
	s.cmd.Env = s.env
	s.cmd.Stdout = s.out
	s.cmd.Stderr = s.out
	s.cmd.ExtraFiles = []*os.File{lf} // fd 3, the first SD_LISTEN_FDS_START
	began := time.Now()
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("inntest: starting innd: %v", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	tb.Cleanup(func() { s.stop(tb) })

	if err := s.waitReady(); err != nil {
		tb.Fatalf("inntest: innd did not come up: %v\n%s", err, s.diagnostics())
	}
	tb.Logf("inntest: innd on %s in %s, ready after %s", s.addr, dir, time.Since(began).Round(time.Millisecond))
	return s
}

// Addr is the host:port of the server. A connection from here starts in
// transit mode (IHAVE); send MODE READER to read.
func (s *Server) Addr() string { return s.addr }

// Pid is innd's process id: the readers it forks (nnrpd), once they
// exit, count in its children's CPU time (/proc/PID/stat).
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Dir is the instance's directory.
func (s *Server) Dir() string { return s.dir }

// INNCONF is the path of the instance's inn.conf: run INN's tools with
// INNCONF set to it.
func (s *Server) INNCONF() string { return s.innconf }

// Output is what innd wrote so far (its news log, with -d).
func (s *Server) Output() string { return s.out.String() }

// Ctlinnd runs ctlinnd against the instance and returns its output, failing
// the test if the command fails.
func (s *Server) Ctlinnd(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := s.ctlinnd(append([]string{"-t", "20"}, args...)...)
	if err != nil {
		tb.Fatalf("inntest: ctlinnd %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out
}

// NewGroup creates a newsgroup that anyone may post to.
func (s *Server) NewGroup(tb testing.TB, name string) {
	tb.Helper()
	s.Ctlinnd(tb, "newgroup", name, "y")
}

// DialPeer opens a connection in transit mode, closed when the test ends.
func (s *Server) DialPeer(tb testing.TB) *textproto.Conn {
	tb.Helper()
	nc, err := net.Dial("tcp", s.addr)
	if err != nil {
		tb.Fatalf("inntest: %v", err)
	}
	c := textproto.NewConn(quickack.Conn(nc))
	tb.Cleanup(func() { c.Close() })
	if _, _, err := c.ReadCodeLine(200); err != nil {
		tb.Fatalf("inntest: greeting: %v", err)
	}
	return c
}

// DialReader opens a connection and sends MODE READER, so that innd hands
// it to nnrpd. It is closed when the test ends.
func (s *Server) DialReader(tb testing.TB) *textproto.Conn {
	tb.Helper()
	c := s.DialPeer(tb)
	id, err := c.Cmd("MODE READER")
	if err == nil {
		c.StartResponse(id)
		_, _, err = c.ReadCodeLine(200)
		c.EndResponse(id)
	}
	if err != nil {
		tb.Fatalf("inntest: MODE READER: %v", err)
	}
	return c
}

// Post offers the articles with IHAVE, in order, on one connection, and
// fails the test unless every one is accepted (235). Articles are numbered
// in the order they are accepted.
func (s *Server) Post(tb testing.TB, articles []Article) {
	tb.Helper()
	c := s.DialPeer(tb)
	for i, a := range articles {
		if err := a.check(); err != nil {
			tb.Fatalf("inntest: article %d: %v", i, err)
		}
		if err := ihave(c, a); err != nil {
			tb.Fatalf("inntest: article %d %s: %v", i, a.MessageID, err)
		}
		s.mu.Lock()
		s.posted = append(s.posted, a.MessageID)
		s.mu.Unlock()
	}
	c.PrintfLine("QUIT")
}

func ihave(c *textproto.Conn, a Article) error {
	id, err := c.Cmd("IHAVE %s", a.MessageID)
	if err != nil {
		return err
	}
	c.StartResponse(id)
	defer c.EndResponse(id)
	if _, _, err := c.ReadCodeLine(335); err != nil {
		return err
	}
	w := c.DotWriter()
	if _, err := w.Write(a.Bytes()); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	_, _, err = c.ReadCodeLine(235)
	return err
}

// Posted is the Message-ID of every article Post had accepted, in order.
func (s *Server) Posted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.posted...)
}

// Numbers maps the Message-ID of every article in the group to its article
// number, read with GROUP and OVER on a reader connection.
func (s *Server) Numbers(tb testing.TB, group string) map[string]int64 {
	tb.Helper()
	c := s.DialReader(tb)
	defer c.Close()
	count, low, high, err := Group(c, group)
	if err != nil {
		tb.Fatalf("inntest: %v", err)
	}
	nums := make(map[string]int64, count)
	if count == 0 {
		return nums
	}
	lines, err := Over(c, low, high)
	if err != nil {
		tb.Fatalf("inntest: %v", err)
	}
	for _, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) < 5 {
			tb.Fatalf("inntest: overview line with %d fields: %q", len(f), l)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			tb.Fatalf("inntest: overview line %q: %v", l, err)
		}
		nums[f[4]] = n
	}
	return nums
}

// Group sends GROUP and returns the estimated count and the watermarks.
func Group(c *textproto.Conn, name string) (count, low, high int64, err error) {
	id, err := c.Cmd("GROUP %s", name)
	if err != nil {
		return 0, 0, 0, err
	}
	c.StartResponse(id)
	defer c.EndResponse(id)
	_, msg, err := c.ReadCodeLine(211)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("GROUP %s: %w", name, err)
	}
	f := strings.Fields(msg)
	if len(f) < 3 {
		return 0, 0, 0, fmt.Errorf("GROUP %s: malformed answer %q", name, msg)
	}
	var n [3]int64
	for i := range n {
		if n[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return 0, 0, 0, fmt.Errorf("GROUP %s: malformed answer %q", name, msg)
		}
	}
	return n[0], n[1], n[2], nil
}

// Over sends OVER low-high and returns the overview lines (224); an
// answer of 423 (no articles in the range) is no lines and no error.
func Over(c *textproto.Conn, low, high int64) ([]string, error) {
	id, err := c.Cmd("OVER %d-%d", low, high)
	if err != nil {
		return nil, err
	}
	c.StartResponse(id)
	defer c.EndResponse(id)
	code, msg, err := c.ReadCodeLine(0)
	if err != nil {
		return nil, err
	}
	switch code {
	case 224:
		return c.ReadDotLines()
	case 423:
		return nil, nil
	}
	return nil, fmt.Errorf("OVER %d-%d: %d %s", low, high, code, msg)
}

// setup writes the instance's configuration and databases into s.dir.
func (s *Server) setup(owner owner, port int) error {
	dirs := map[string]string{ // inn.conf key → directory under s.dir
		"pathetc":      "etc",
		"pathdb":       "db",
		"pathrun":      "run",
		"pathlog":      "log",
		"pathhttp":     "http",
		"pathfilter":   "filter",
		"pathtmp":      "tmp",
		"pathspool":    "spool",
		"patharticles": "spool/articles",
		"pathoverview": "spool/overview",
		"pathincoming": "spool/incoming",
		"patharchive":  "spool/archive",
		"pathoutgoing": "spool/outgoing",
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(s.dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return err
	}
	etc := filepath.Join(s.dir, "etc")
	if err := copyTemplate(etc); err != nil {
		return err
	}
	conf, err := innConf(s.dir, dirs, owner, port)
	if err != nil {
		return err
	}
	db := filepath.Join(s.dir, "db")
	files := map[string]string{
		filepath.Join(etc, "inn.conf"): conf,
		// tradspool: one file per article under patharticles/group/name.
		filepath.Join(etc, "storage.conf"): "method tradspool {\n    newsgroups: *\n    class: 0\n}\n",
		filepath.Join(etc, "readers.conf"): `auth "inntest" {
    hosts: "localhost, 127.0.0.1, ::1, stdin"
    default: "<inntest>"
}
access "inntest" {
    users: "<inntest>"
    newsgroups: "*"
    access: RPA
}
`,
		// localhost is a peer: its connections may send IHAVE.
		filepath.Join(etc, "incoming.conf"): `streaming: true
max-connections: 0
peer ME {
    hostname: "localhost, 127.0.0.1, ::1"
}
`,
		// innd refuses to start without a feed to some other site.
		filepath.Join(etc, "newsfeeds"): "ME:*::\ndevnull:!*:Tf,Wn:\n",
		// innd refuses to start without control.cancel.
		filepath.Join(db, "active"):       "control 0000000000 0000000001 n\ncontrol.cancel 0000000000 0000000001 n\njunk 0000000000 0000000001 n\n",
		filepath.Join(db, "active.times"): "",
		filepath.Join(db, "newsgroups"):   "",
		filepath.Join(db, "history"):      "",
	}
	for name, content := range files {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := owner.chown(s.dir); err != nil {
		return err
	}
	// An empty history database. As root makedbz drops to the news user
	// itself, so the directory must be news's first.
	cmd := exec.Command(filepath.Join(Bin, "makedbz"), "-i", "-o", "-s", "10000")
	cmd.Dir = db
	cmd.Env = s.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("makedbz: %w: %s", err, bytes.TrimSpace(out))
	}
	return owner.chown(s.dir)
}

// innConf is the template's inn.conf with every directory moved into dir
// and the settings an instance needs.
func innConf(dir string, dirs map[string]string, owner owner, port int) (string, error) {
	tmpl, err := os.ReadFile(filepath.Join(Template, "inn.conf"))
	if err != nil {
		return "", err
	}
	set := map[string]string{
		"domain":      "example.test",
		"pathhost":    PathHost,
		"port":        strconv.Itoa(port), // innd gets its socket from us; nnrpd and the tools read it
		"bindaddress": "127.0.0.1",
		"runasuser":   owner.user,
		"runasgroup":  owner.group,
		"ovmethod":    "tradindexed",
		"hismethod":   "hisv6",
		// Overview written by innd itself as it stores an article, not by
		// an overchan feed, so an accepted article is in OVER at once.
		"enableoverview": "true",
		"useoverchan":    "false",
		"artcutoff":      "0", // articles of any age
		// nnrpd refuses readers above this load average; parallel -race
		// tests can get there.
		"nnrpdloadlimit": "0",
		"status":         "0",
		"timer":          "0",
		"doinnwatch":     "false",
		"pgpverify":      "false",
	}
	for key, d := range dirs {
		set[key] = filepath.Join(dir, d)
	}
	// Programs stay where the package put them.
	keep := map[string]bool{"pathbin": true, "pathnews": true, "pathcontrol": true}
	var b strings.Builder
	for _, line := range strings.Split(string(tmpl), "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || strings.HasPrefix(key, "#") {
			b.WriteString(line + "\n")
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if _, ours := set[key]; ours {
			continue
		}
		if strings.HasPrefix(key, "path") && !keep[key] && strings.HasPrefix(value, "/") {
			// A directory setting this package does not know yet: move it too.
			set[key] = filepath.Join(dir, strings.TrimPrefix(key, "path"))
			if err := os.MkdirAll(set[key], 0o755); err != nil {
				return "", err
			}
			continue
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("\n# inntest\n")
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, set[k])
	}
	return b.String(), nil
}

// copyTemplate copies the regular files of Template into etc, skipping those
// this user may not read (a non-root user cannot read some of /etc/news).
func copyTemplate(etc string) error {
	entries, err := os.ReadDir(Template)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(Template, e.Name()))
		if errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(etc, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// waitReady waits until ctlinnd says the server is running and innd
// greets on its port.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	var last string
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("innd exited: %v", s.waitErr)
		default:
		}
		out, err := s.ctlinnd("-t", "2", "mode")
		if err == nil && strings.Contains(out, "Server running") {
			break
		}
		last = strings.TrimSpace(out)
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer after %s; ctlinnd mode: %s", startTimeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := textproto.NewReader(bufio.NewReader(c)).ReadLine()
	if err != nil {
		return fmt.Errorf("greeting: %w", err)
	}
	if !strings.HasPrefix(line, "200") {
		return fmt.Errorf("greeting: %q", line)
	}
	return nil
}

func (s *Server) ctlinnd(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(Bin, "ctlinnd"), args...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stop shuts innd down (ctlinnd shutdown, then a kill if it lingers) and,
// if the test failed, logs what innd wrote.
func (s *Server) stop(tb testing.TB) {
	began := time.Now()
	select {
	case <-s.exited:
	default:
		s.ctlinnd("-t", "10", "shutdown", "inntest: test over")
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			tb.Logf("inntest: innd did not shut down in 15s; killing it")
			s.cmd.Process.Kill()
			<-s.exited
		}
	}
	tb.Logf("inntest: innd on %s stopped in %s", s.addr, time.Since(began).Round(time.Millisecond))
	if tb.Failed() {
		tb.Logf("inntest: innd in %s exited (%v)\n%s", s.dir, s.waitErr, s.diagnostics())
	}
}

// diagnostics is innd's output and its log directory. innd and nnrpd send
// their errors to syslog (/dev/log); where no syslog runs they are lost.
func (s *Server) diagnostics() string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- innd output:\n%s", s.out.String())
	logs, _ := filepath.Glob(filepath.Join(s.dir, "log", "*"))
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil || len(data) == 0 {
			continue
		}
		fmt.Fprintf(&b, "--- %s:\n%s", l, data)
	}
	b.WriteString("--- (innd's own errors go to syslog via /dev/log, not to this output)\n")
	return b.String()
}

// owner is the user and group innd runs as, and owns the instance's files.
type owner struct {
	user, group string
	uid, gid    int
	chownFiles  bool
}

func runAs() (owner, error) {
	var u *user.User
	var err error
	if os.Geteuid() == 0 {
		// innd drops root's privileges to runasuser.
		if u, err = user.Lookup("news"); err != nil {
			return owner{}, fmt.Errorf("running as root and no news user for innd to run as: %w", err)
		}
	} else if u, err = user.Current(); err != nil {
		return owner{}, err
	} else if u.Username != "news" {
		// innd checks for the news user and group before it reads
		// runasuser and runasgroup from inn.conf.
		return owner{}, fmt.Errorf("innd runs only as root (it drops to news) or as the news user, not as %s", u.Username)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if os.Geteuid() != 0 {
		gid = os.Getegid() // INN checks the group the process runs as
	}
	g, err := user.LookupGroupId(strconv.Itoa(gid))
	if err != nil {
		return owner{}, err
	}
	return owner{user: u.Username, group: g.Name, uid: uid, gid: gid, chownFiles: os.Geteuid() == 0}, nil
}

func (o owner) chown(dir string) error {
	if !o.chownFiles {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, o.uid, o.gid)
	})
}

// childEnv is this process's environment with INNCONF pointing at the
// instance and nothing that would redirect innd's sockets.
func childEnv(innconf string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "INNCONF", "INND_BIND_ADDRESS", "INND_BIND_ADDRESS6", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "INNCONF="+innconf)
}
