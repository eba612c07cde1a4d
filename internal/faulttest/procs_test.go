package faulttest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is a child process started by the test. Its stdout and stderr go to
// a log file. It is killed (SIGKILL) and waited for when the test ends, and
// it gets SIGKILL too if the test's thread that started it dies.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // Wait's error, once done is closed
}

// startProc starts bin with args, appending its output to logPath. env is
// added to the test's environment; cred, when not nil, runs it as another
// user.
func startProc(t *testing.T, name, logPath string, env []string, cred *syscall.Credential, dir, bin string, args ...string) *proc {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // the child has its own copy
	fmt.Fprintf(f, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), filepath.Base(bin), strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		<-p.done
	})
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig unless the process has ended.
func (p *proc) signal(sig syscall.Signal) error {
	if p.exited() {
		return fmt.Errorf("%s has exited: %v", p.name, p.err)
	}
	return p.cmd.Process.Signal(sig)
}

// kill sends SIGKILL (which also ends a stopped process) and waits.
func (p *proc) kill() {
	if !p.exited() {
		p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// wait waits at most d for the process to end.
func (p *proc) wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// logSize is the current size of the process's log: an offset to read
// what it writes from now on.
func (p *proc) logSize() int64 {
	st, err := os.Stat(p.log)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logFrom returns the process's log from offset off.
func (p *proc) logFrom(off int64) string {
	b, err := os.ReadFile(p.log)
	if err != nil || off > int64(len(b)) {
		return ""
	}
	return string(b[off:])
}

// tail returns the last n lines of a log file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// buildBinaries builds the coordinator and the edge worker into dir. The
// coordinator is built with the race detector when race is set (it is the
// server under test; the test fails on a race it reports); the workers are
// plain builds, so eight of them run at full speed on a small machine.
func buildBinaries(t *testing.T, dir string, race bool) (coordinator, worker string) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	coordinator, worker = filepath.Join(dir, "coordinator"), filepath.Join(dir, "edgeworker")
	for bin, pkg := range map[string]string{coordinator: "./cmd/coordinator", worker: "./cmd/edgeworker"} {
		args := []string{"build", "-o", bin}
		if race && bin == coordinator {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return coordinator, worker
}

// moduleRoot is the directory of the module's go.mod, two levels up.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root := filepath.Join(wd, "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("no go.mod two levels above %s: %w", wd, err)
	}
	return root, nil
}
