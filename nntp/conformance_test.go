package nntp_test

import (
	"testing"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/sources/sourcetest"
)

// conformanceGroup holds 1..3000 with every 7th article missing, and
// 5,000,000,000..5,000,002,000, so the watermarks are 1 and 5,000,002,000.
func conformanceGroup() (nntptest.Group, func(int64) bool) {
	present := func(n int64) bool {
		switch {
		case n >= 1 && n <= 3000:
			return n%7 != 0
		case n >= 5_000_000_000 && n <= 5_000_002_000:
			return true
		}
		return false
	}
	var lines [][]byte
	for n := int64(1); n <= 3000; n++ {
		if present(n) {
			lines = append(lines, nntptest.Line(testGroup, n))
		}
	}
	lines = append(lines, nntptest.Lines(testGroup, 5_000_000_000, 5_000_002_000)...)
	return nntptest.Group{Name: testGroup, Lines: lines}, present
}

func TestConformance(t *testing.T) {
	t.Parallel()
	variants := []struct {
		name string
		cfg  nntptest.Config
		mod  func(*nntp.Config)
	}{
		{"plain", nntptest.Config{}, nil},
		{"empty-block", nntptest.Config{EmptyReply: 224}, nil},
		{"xover", nntptest.Config{NoOver: true}, nil},
		{"zlib", nntptest.Config{Compress: true}, func(c *nntp.Config) { c.Compress = nntp.CompressGzip }},
		{"gzip", nntptest.Config{Compress: true, Gzip: true}, func(c *nntp.Config) { c.Compress = nntp.CompressGzip }},
		{"zlib-terminator-outside", nntptest.Config{Compress: true, TerminatorOutside: true, NoMark: true}, func(c *nntp.Config) { c.Compress = nntp.CompressGzip }},
		{"tls-auth", nntptest.Config{TLS: true, User: "reader", Pass: "s3cret", AuthFirst: true}, nil},
		{"starttls-auth", nntptest.Config{StartTLS: true, RequireTLS: true, User: "reader", Pass: "s3cret"}, func(c *nntp.Config) { c.StartTLS = nntp.StartTLSRequire }},
		{"mode-reader", nntptest.Config{ModeReader: true, NoCapabilities: false}, nil},
		// COMPRESS DEFLATE both ways, plain and behind TLS and a login first.
		{"deflate", nntptest.Config{Deflate: true}, func(c *nntp.Config) { c.Compress = nntp.CompressDeflate }},
		{"deflate-tls-auth", nntptest.Config{Deflate: true, TLS: true, User: "reader", Pass: "s3cret", AuthFirst: true},
			func(c *nntp.Config) { c.Compress = nntp.CompressDeflate }},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			sourcetest.Run(t, func(t *testing.T) sourcetest.Harness {
				g, present := conformanceGroup()
				cfg := v.cfg
				cfg.Groups = []nntptest.Group{g}
				srv := serve(t, cfg)
				src := open(t, srv, v.mod)
				empty := lease.Span{From: 3001, To: 4000}
				big := lease.Span{From: 5_000_000_000, To: 5_000_001_999}
				return sourcetest.Harness{
					Source:    src,
					Group:     testGroup,
					Low:       1,
					High:      5_000_002_000,
					Present:   present,
					Span:      lease.Span{From: 1, To: 2000},
					EmptySpan: &empty,
					BigSpan:   &big,
				}
			})
		})
	}
}
