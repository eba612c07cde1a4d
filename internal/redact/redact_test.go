package redact_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/redact"
)

// misplaced is what URL and URLShowing show for a URL whose unescaped
// password ended its authority early.
const misplaced = `(a URL with an "@" after its host: percent-encode the password)`

func TestURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"postgres://u:secret@127.0.0.1:5432/db?sslmode=disable": "postgres://u:xxxxx@127.0.0.1:5432/db?sslmode=disable",
		"postgres://127.0.0.1/db?password=secret&user=u":        "postgres://127.0.0.1/db?password=xxxxx&user=u",
		"nntps://reader:secret@news.example.com?conns=8":        "nntps://reader:xxxxx@news.example.com?conns=8",
		"nntp://reader@news.example.com":                        "nntp://reader@news.example.com",
		"sqlite:///var/lib/edgeindex/db":                        "sqlite:///var/lib/edgeindex/db",
		"postgres://u:secret@host:port/%zz":                     "(a URL that does not parse)",
		"nntp://h:119#secret":                                   "nntp://h:119#xxxxx",
		"nntps://user:1234/secret@news.example:563":             misplaced,
		"nntps://user:1234?secret@news.example:563":             misplaced,
		"nntps://user:1234#secret@news.example:563":             misplaced,
	} {
		got := redact.URL(raw)
		require.Equal(t, want, got, raw)
		require.NotContains(t, got, "secret", raw)
	}
}

func TestURLShowing(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"s3://k:secret@bucket/p?tls=false&region=r":    "s3://k:xxxxx@bucket/p?region=r&tls=false",
		"s3://bucket?key=secret&tls=true":              "s3://bucket?key=xxxxx&tls=true",
		"s3://bucket?endpoint=http://u:secret@h:1":     "s3://bucket?endpoint=http%3A%2F%2Fu%3Axxxxx%40h%3A1",
		"s3://bucket?tls=%zz&k=secret":                 "s3://bucket?xxxxx",
		"s3://bucket":                                  "s3://bucket",
		"s3://bucket?endpoint=127.0.0.1:9000&x=y":      "s3://bucket?endpoint=127.0.0.1%3A9000&x=xxxxx",
		"s3://bucket?endpoint=u:secret@127.0.0.1:9000": "s3://bucket?endpoint=%28a+URL+that+does+not+parse%29",
		"s3://u:secret@bucket\x7f":                     "(a URL that does not parse)",
		"s3://bucket#secret":                           "s3://bucket#xxxxx",
		"s3://u:1234/secret@bucket":                    misplaced,
		"s3://u:1234#secret@bucket":                    misplaced,
	} {
		got := redact.URLShowing(raw, "endpoint", "region", "tls")
		require.Equal(t, want, got, raw)
		require.NotContains(t, got, "secret", raw)
	}
}
