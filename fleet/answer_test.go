package fleet

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/grouplease"
)

// TestAnswerTextOfOddCoordinator: a coordinator's error sentence is a
// peer's text. What the fleet shows of it (a host's Detail, the dashboard,
// /readyz) is on one line, with no bidi override, and bounded, however
// long the sentence the coordinator sent.
func TestAnswerTextOfOddCoordinator(t *testing.T) {
	t.Parallel()
	msg := "token\u202e\r\nrefused " + strings.Repeat("é", 32<<10)
	got := answerText(&api.Error{Status: http.StatusUnauthorized, Message: msg})
	require.True(t, strings.HasPrefix(got, "401: token   refused é"), got[:40])
	require.NotContains(t, got, "\u202e")
	require.NotContains(t, got, "\n")
	require.LessOrEqual(t, len(got), len("401: ")+grouplease.MaxPlanError)
	require.True(t, strings.HasSuffix(got, "…"), "the cut is marked")
	require.True(t, utf8.ValidString(got))
	require.Equal(t, "401: the token is wrong", answerText(&api.Error{Status: http.StatusUnauthorized, Message: "the token is wrong"}),
		"a plain sentence is kept as it is")
	require.Equal(t, "403 Forbidden", answerText(&api.Error{Status: http.StatusForbidden}))
}
