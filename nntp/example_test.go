package nntp_test

import (
	"context"
	"fmt"
	"log"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/overview"
)

// A Source fetches a chunk of overview lines from a server (here the
// in-repo test server) and overview.ReadChunk reads it back.
func Example() {
	srv, err := nntptest.New(nntptest.Config{Groups: []nntptest.Group{{
		Name: "alt.binaries.example",
		Lines: [][]byte{
			[]byte("5000000001\t[1/2] - \"demo.rar\" yEnc (1/2)\tposter <p@example.invalid>\tMon, 1 Jan 2024 00:00:00 +0000\t<1@example>\t\t750000\t5800"),
			[]byte("5000000002\t[1/2] - \"demo.rar\" yEnc (2/2)\tposter <p@example.invalid>\tMon, 1 Jan 2024 00:00:10 +0000\t<2@example>\t\t420000\t3300"),
			[]byte("5000000004\t[2/2] - \"demo.par2\" yEnc (1/1)\tposter <p@example.invalid>\tMon, 1 Jan 2024 00:00:20 +0000\t<4@example>\t\t9000\t80"),
		},
	}}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	src, err := nntp.New(nntp.Config{Addr: srv.Addr(), MaxConns: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()

	ctx := context.Background()
	if err := src.Check(ctx); err != nil {
		log.Fatal(err)
	}
	low, high, err := src.Watermarks(ctx, "alt.binaries.example")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("watermarks", low, high)
	chunk, err := src.Fetch(ctx, "alt.binaries.example", lease.Span{From: low, To: high})
	if err != nil {
		log.Fatal(err)
	}
	err = overview.ReadChunk(chunk, func(o overview.Overview) error {
		fmt.Println(o.Number, o.Subject, o.Bytes)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// watermarks 5000000001 5000000004
	// 5000000001 [1/2] - "demo.rar" yEnc (1/2) 750000
	// 5000000002 [1/2] - "demo.rar" yEnc (2/2) 420000
	// 5000000004 [2/2] - "demo.par2" yEnc (1/1) 9000
}

// ParseURL reads a source URL; the password never shows when the Config
// is printed.
func ExampleParseURL() {
	cfg, err := nntp.ParseURL("nntps://reader:secret@news.example.com?conns=8&compress=1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.Addr, cfg.TLS, cfg.MaxConns, cfg.Compress)
	fmt.Println(cfg.User, cfg.Pass == "secret")
	_, err = nntp.ParseURL("nntp://news.example.com:99999")
	fmt.Println(err)
	// Output:
	// news.example.com:563 true 8 gzip
	// reader true
	// bad NNTP URL: port "99999": want 1..65535
}
