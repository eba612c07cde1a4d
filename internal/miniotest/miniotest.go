// Package miniotest gives tests an S3-compatible bucket: a part of the one
// TEST_S3_URL names, or a new bucket of a throwaway MinIO server started
// from the machine's minio binary (on PATH, or in $GOBIN or $GOPATH/bin,
// where `go install github.com/minio/minio@VERSION` puts it; .ci/run
// builds it) on a free loopback port in a temporary directory. The server
// is started once per test binary, and stopped by testmain.Main; it dies
// with the test binary if that is killed.
//
// With EDGEINDEX_REQUIRE_S3=1 a test fails, rather than skips, when no
// MinIO can be had: CI sets it, so the object-store half of a suite never
// skips silently.
package miniotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/internal/testmain"
)

// Environment variables the package reads.
const (
	// EnvURL names an S3 store to use instead of a throwaway server:
	// s3://ACCESS:SECRET@BUCKET[/PREFIX]?endpoint=...; each test gets a
	// prefix of its own under it, emptied when the test ends.
	EnvURL = "TEST_S3_URL"
	// EnvRequire, set to 1, makes a test fail when no store can be had.
	EnvRequire = "EDGEINDEX_REQUIRE_S3"
	// EnvBinary names the minio binary to run, overriding the search.
	EnvBinary = "EDGEINDEX_MINIO"
)

// The throwaway server's credentials (MINIO_ROOT_USER, _PASSWORD).
const (
	rootUser     = "edgeindex"
	rootPassword = "edgeindex-test-secret"
)

var (
	once     sync.Once
	baseURL  string // s3://user:pass@/?endpoint=... (no bucket) or TEST_S3_URL
	shared   bool   // baseURL is TEST_S3_URL: prefixes, not buckets
	startErr error
)

// URL returns the s3:// URL, credentials included, of a new, empty bucket
// of the throwaway server (or of a new prefix under TEST_S3_URL), removed
// when the test ends. It skips the test when no store can be had, or
// fails it under EDGEINDEX_REQUIRE_S3=1.
func URL(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		var stop func()
		baseURL, shared, stop, startErr = start()
		if stop != nil {
			testmain.AtExit(stop)
		}
	})
	if startErr != nil {
		if os.Getenv(EnvRequire) == "1" {
			tb.Fatalf("miniotest: an S3 store is required (%s=1): %v", EnvRequire, startErr)
		}
		tb.Skipf("miniotest: no S3 store: %v", startErr)
	}
	name := "t-" + randomHex(tb, 8)
	if shared {
		cfg, err := blobstore.ParseURL(baseURL, nil)
		if err != nil {
			tb.Fatalf("miniotest: %s: %v", EnvURL, err)
		}
		prefix := strings.Trim(cfg.Prefix+"/edgeindex-test-"+name, "/")
		u, _ := url.Parse(baseURL)
		u.Path = "/" + prefix
		cfg.Prefix = prefix
		tb.Cleanup(func() { empty(tb, cfg) })
		return u.String()
	}
	u, _ := url.Parse(baseURL)
	u.Host = name
	cfg, err := blobstore.ParseURL(u.String(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	client, closeClient, err := cfg.NewClient()
	if err != nil {
		tb.Fatal(err)
	}
	defer closeClient()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := client.MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
		tb.Fatalf("miniotest: make bucket: %v", err)
	}
	tb.Cleanup(func() {
		empty(tb, cfg)
		client, closeClient, err := cfg.NewClient()
		if err != nil {
			return
		}
		defer closeClient()
		client.RemoveBucket(context.Background(), name)
	})
	return u.String()
}

// Store returns a store on a new bucket (see URL), closed when the test
// ends.
func Store(tb testing.TB) *blobstore.S3 {
	tb.Helper()
	raw := URL(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := blobstore.OpenURL(ctx, raw)
	if err != nil {
		tb.Fatalf("miniotest: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// empty removes every object under cfg's bucket and prefix.
func empty(tb testing.TB, cfg blobstore.S3Config) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := blobstore.OpenS3(ctx, cfg)
	if err != nil {
		tb.Logf("miniotest: empty the test's bucket: %v", err)
		return
	}
	defer s.Close()
	var keys []string
	s.List(ctx, "", func(info blobstore.Info) error {
		keys = append(keys, info.Key)
		return nil
	})
	for _, k := range keys {
		s.Delete(ctx, k)
	}
}

func randomHex(tb testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// start returns the base URL: TEST_S3_URL, or a new server's.
func start() (string, bool, func(), error) {
	if u := os.Getenv(EnvURL); u != "" {
		if _, err := blobstore.ParseURL(u, nil); err != nil {
			return "", false, nil, fmt.Errorf("%s: %w", EnvURL, err)
		}
		return u, true, nil, nil
	}
	bin, err := Binary()
	if err != nil {
		return "", false, nil, err
	}
	dir, err := os.MkdirTemp("", "edgeindex-minio-")
	if err != nil {
		return "", false, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	port, err := freePort()
	if err != nil {
		cleanup()
		return "", false, nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logPath := filepath.Join(dir, "minio.log")
	logf, err := os.Create(logPath)
	if err != nil {
		cleanup()
		return "", false, nil, err
	}
	cmd := exec.Command(bin, "server", filepath.Join(dir, "data"), "--address", addr, "--quiet", "--anonymous")
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+rootUser,
		"MINIO_ROOT_PASSWORD="+rootPassword,
		"MINIO_BROWSER=off", // no console on another port
		"MINIO_UPDATE=off",  // no update check: the network is not ours
		"MINIO_CALLHOME_ENABLE=off",
		"HOME="+dir, // its client config, if any, stays here
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		cleanup()
		return "", false, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		cleanup()
	}
	if err := waitReady(addr, exited); err != nil {
		stop()
		log, _ := os.ReadFile(logPath)
		return "", false, nil, fmt.Errorf("%s server: %w\n%s", bin, err, log)
	}
	u := fmt.Sprintf("s3://%s:%s@placeholder?endpoint=%s&tls=false&path-style=true&region=us-east-1", rootUser, rootPassword, addr)
	return u, false, stop, nil
}

// waitReady waits until the server answers its liveness probe.
func waitReady(addr string, exited <-chan error) error {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before it was ready: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("not ready within 60s")
		}
	}
}

// Binary finds the minio binary: EDGEINDEX_MINIO, then PATH, then $GOBIN,
// then $GOPATH/bin (by default $HOME/go/bin).
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	for _, p := range filepath.SplitList(gopath) {
		dirs = append(dirs, filepath.Join(p, "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "minio")
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("no minio binary on PATH, in $GOBIN or in $GOPATH/bin (go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c)")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
