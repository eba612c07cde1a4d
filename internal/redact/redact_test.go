package redact_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/redact"
)

func TestURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"postgres://u:secret@127.0.0.1:5432/db?sslmode=disable": "postgres://u:xxxxx@127.0.0.1:5432/db?sslmode=disable",
		"postgres://127.0.0.1/db?password=secret&user=u":        "postgres://127.0.0.1/db?password=xxxxx&user=u",
		"nntps://reader:secret@news.example.com?conns=8":        "nntps://reader:xxxxx@news.example.com?conns=8",
		"nntp://reader@news.example.com":                        "nntp://reader@news.example.com",
		"sqlite:///var/lib/edgeindex/db":                        "sqlite:///var/lib/edgeindex/db",
		"postgres://u:secret@host:port/%zz":                     "(a URL that does not parse)",
	} {
		got := redact.URL(raw)
		require.Equal(t, want, got, raw)
		require.NotContains(t, got, "secret", raw)
	}
}
