// Package nzbgettest runs a real downloader, Debian's NZBGet, on an NZB
// file in tests, and checks NZB files against the NZB 1.1 DTD with
// xmllint (Debian's nzbget and libxml2-utils packages).
//
// Download writes a configuration into a temporary directory (one server:
// the news server to read from, such as an inntest.Reader, or several with
// DownloadFrom; no par-check, no unpacking, a free control port) and runs NZBGet once in standalone
// mode (nzbget -c CONFIG -o OutputMode=log FILE.nzb); it returns the
// SHA-256 of every file NZBGet rebuilt, and its log.
//
// Without nzbget or xmllint (apt-get install nzbget libxml2-utils) the
// test skips, or fails when EDGEINDEX_REQUIRE_NZBGET=1 (CI sets it).
package nzbgettest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeindex/edgeindex/internal/inntest"
)

// RequireEnv names the environment variable that, set to 1, turns a skip
// for want of NZBGet or xmllint into a failure.
const RequireEnv = "EDGEINDEX_REQUIRE_NZBGET"

// Timeout bounds one NZBGet run.
const Timeout = 2 * time.Minute

// tool returns the path of a program, or skips (fails under RequireEnv).
func tool(tb testing.TB, name, pkg string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("nzbgettest: %s is required (%s=1): apt-get install %s: %v", name, RequireEnv, pkg, err)
		}
		tb.Skipf("nzbgettest: no %s (apt-get install %s): %v", name, pkg, err)
	}
	return path
}

// RequireINN fails the test under RequireEnv when INN's binaries are
// missing, so that a test of NZBGet against INN never skips there for want
// of INN (inntest.Start alone skips unless EDGEINDEX_REQUIRE_INN=1).
func RequireINN(tb testing.TB) {
	tb.Helper()
	if os.Getenv(RequireEnv) != "1" {
		return
	}
	if err := inntest.Available(); err != nil {
		tb.Fatalf("nzbgettest: INN is required to test NZBGet (%s=1): %v", RequireEnv, err)
	}
}

// NZBGet returns nzbget's path, or skips the test.
func NZBGet(tb testing.TB) string { tb.Helper(); return tool(tb, "nzbget", "nzbget") }

// XMLLint returns xmllint's path, or skips the test.
func XMLLint(tb testing.TB) string { tb.Helper(); return tool(tb, "xmllint", "libxml2-utils") }

// Validate checks an NZB file against a DTD with xmllint --dtdvalid
// (--nonet: the DTD named in the document type is never fetched), failing
// the test with xmllint's output when it is not valid.
func Validate(tb testing.TB, dtd, file string) {
	tb.Helper()
	out, err := exec.Command(XMLLint(tb), "--noout", "--nonet", "--dtdvalid", dtd, file).CombinedOutput()
	if err != nil {
		tb.Fatalf("nzbgettest: %s is not valid against %s: %v\n%s", file, dtd, err, out)
	}
}

// Result is what one NZBGet run rebuilt.
type Result struct {
	// Files maps the name of every file under DestDir to its SHA-256, in
	// hex.
	Files map[string]string
	// Log is NZBGet's output (OutputMode=log) and its log file.
	Log string
}

// config returns a new temporary directory, a free control port and
// the configuration lines every NZBGet here runs with: everything under
// the directory, a news server at each of servers (host:port, no TLS, no
// login), the control port on loopback, no par check, no unpack. The
// servers are all of level 0: NZBGet tries an article on the others of
// the level when one lacks it, as with two providers that each hold part
// of a post. An option NZBGet does not like pauses everything rather
// than failing (the NZBGet recipe): these are the tried ones.
func config(tb testing.TB, servers []string) (dir string, control int, lines []string) {
	tb.Helper()
	if len(servers) == 0 {
		tb.Fatalf("nzbgettest: no news server")
	}
	dir = tb.TempDir()
	var err error
	if control, err = freePort(); err != nil {
		tb.Fatalf("nzbgettest: %v", err)
	}
	lines = []string{
		"MainDir=" + dir,
		"DestDir=${MainDir}/dst",
		"InterDir=${MainDir}/inter",
		"NzbDir=${MainDir}/nzb",
		"QueueDir=${MainDir}/queue",
		"TempDir=${MainDir}/tmp",
		"LogFile=${MainDir}/nzbget.log",
		"WebDir=/usr/share/nzbget/webui",
		"ConfigTemplate=",
		"ControlIP=127.0.0.1",
		"ControlPort=" + strconv.Itoa(control),
		"ParCheck=manual",
		"Unpack=no",
	}
	for i, addr := range servers {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			tb.Fatalf("nzbgettest: server %q: %v", addr, err)
		}
		n := fmt.Sprintf("Server%d.", i+1)
		lines = append(lines, n+"Active=yes", n+"Host="+host, n+"Port="+port, n+"Connections=2", n+"Level=0")
	}
	return dir, control, lines
}

// Download runs NZBGet once on the NZB file nzbFile, reading articles
// from the news server at addr (host:port, no TLS, no login), and returns
// the files it rebuilt. A run that fails or times out fails the test.
func Download(tb testing.TB, addr, nzbFile string) Result {
	tb.Helper()
	return DownloadFrom(tb, []string{addr}, nzbFile)
}

// DownloadFrom is Download reading from several news servers, all of one
// level: an article one of them lacks is read from another.
func DownloadFrom(tb testing.TB, servers []string, nzbFile string) Result {
	tb.Helper()
	nzbget := NZBGet(tb)
	dir, _, lines := config(tb, servers)
	conf := strings.Join(append(lines, ""), "\n")
	confFile := filepath.Join(dir, "nzbget.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		tb.Fatalf("nzbgettest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, nzbget, "-c", confFile, "-o", "OutputMode=log", nzbFile)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	logFile, _ := os.ReadFile(filepath.Join(dir, "nzbget.log"))
	res := Result{Files: map[string]string{}, Log: string(out) + "\n--- nzbget.log:\n" + string(logFile)}
	if err != nil {
		tb.Fatalf("nzbgettest: nzbget %s: %v\n%s", nzbFile, err, res.Log)
	}
	// No dst directory: NZBGet rebuilt nothing.
	dst := filepath.Join(dir, "dst")
	switch _, err := os.Stat(dst); {
	case err == nil:
		res.Files = Files(tb, dst)
	case !os.IsNotExist(err):
		tb.Fatalf("nzbgettest: reading %s: %v", dst, err)
	}
	return res
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
