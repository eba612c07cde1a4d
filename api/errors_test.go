package api_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/grouplease"
)

// Every error the server answers reads back, from its status and code, as
// an error that matches what the server had.
func TestTableRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{api.ErrForbidden, 403, api.CodeForbidden},
		{api.ErrUnauthorized, 401, api.CodeUnauthorized},
		{api.ErrMethodNotAllowed, 405, api.CodeMethodNotAllowed},
		{fmt.Errorf("%w: no room", api.ErrBusy), 503, api.CodeBusy},
		{fmt.Errorf("%w: a batch of at most 9 bytes", api.ErrTooLarge), 413, api.CodeTooLarge},
		{edgeframe.ErrTooLarge, 413, api.CodeTooLarge},
		{edgeindex.Invalidf("id: a positive integer"), 400, api.CodeInvalid},
		{fmt.Errorf("items[0]: %w", edgeframe.ErrBadBatch), 400, api.CodeInvalid},
		{batch.ErrMalformed, 400, api.CodeInvalid},
		{fmt.Errorf("range 3: %w", edgeindex.ErrNotFound), 404, api.CodeNotFound},
		{fmt.Errorf("range 3: %w: token 2 is not current", edgeindex.ErrLeaseLost), 409, api.CodeLeaseLost},
		{batch.ErrGap, 409, api.CodeConflict},
		{grouplease.ErrSnapshotOlder, 409, api.CodeConflict},
		{errors.New("pq: the database is on fire"), 500, api.CodeInternal},
	} {
		status, code := api.StatusOf(tc.err)
		require.Equal(t, tc.status, status, "%v", tc.err)
		require.Equal(t, tc.code, code, "%v", tc.err)
		back := api.ErrorOf(status, code)
		switch code {
		case api.CodeInternal:
			require.ErrorIs(t, back, api.ErrServer)
		case api.CodeInvalid:
			require.ErrorIs(t, back, edgeindex.ErrInvalid)
		case api.CodeTooLarge:
			require.ErrorIs(t, back, api.ErrTooLarge)
		default:
			require.ErrorIs(t, tc.err, back, "%d %s reads back as %v", status, code, back)
		}
	}
}

func TestErrorOfWithoutCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		code   string
		want   error
		not    error
	}{
		{409, "", edgeindex.ErrConflict, edgeindex.ErrLeaseLost}, // never a lost lease by status alone
		{409, api.CodeLeaseLost, edgeindex.ErrLeaseLost, edgeindex.ErrConflict},
		{409, api.CodeNotFound, edgeindex.ErrConflict, edgeindex.ErrNotFound}, // a code the status disagrees with
		{404, "", edgeindex.ErrNotFound, nil},
		{403, "", api.ErrUnauthorized, nil},
		{429, "", api.ErrBusy, nil},
		{429, api.CodeBusy, api.ErrServer, nil},
		{502, "", api.ErrServer, api.ErrBusy},
		{503, "", api.ErrServer, nil},
		{418, "", api.ErrProtocol, nil},
		{302, "", api.ErrProtocol, nil},
	} {
		got := api.ErrorOf(tc.status, tc.code)
		require.ErrorIs(t, got, tc.want, "%d %q", tc.status, tc.code)
		if tc.not != nil {
			require.NotErrorIs(t, got, tc.not, "%d %q", tc.status, tc.code)
		}
	}
}

func TestReadError(t *testing.T) {
	t.Parallel()
	resp := func(status int, body string) *http.Response {
		return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(body))}
	}
	e := api.ReadError("POST", "/v1/ranges/1/batch", resp(409, `{"error": "range 1: lease lost", "code": "lease_lost"}`))
	require.Equal(t, api.Error{Method: "POST", Path: "/v1/ranges/1/batch", Status: 409, Code: "lease_lost", Message: "range 1: lease lost"}, *e)
	require.ErrorIs(t, e, edgeindex.ErrLeaseLost)
	require.Contains(t, e.Error(), "range 1: lease lost")

	e = api.ReadError("GET", "/v1/fleet", resp(502, "<html>bad gateway</html>\n"))
	require.Equal(t, "<html>bad gateway</html>", e.Message)
	require.Empty(t, e.Code)
	require.ErrorIs(t, e, api.ErrServer)

	e = api.ReadError("GET", "/v1/fleet", resp(500, strings.Repeat("x", 2000)))
	require.Len(t, e.Message, 512+len("…"))

	long := strings.Repeat("é", 15000) // 30,000 bytes: the two fit in the 64 KiB read
	e = api.ReadError("GET", "/v1/fleet", resp(500, `{"error": "`+long+`", "code": "`+long+`"}`))
	require.Equal(t, long[:512]+"…", e.Message, "a JSON error's message is cut as a plain body's")
	require.Equal(t, long[:512]+"…", e.Code)
	require.ErrorIs(t, e, api.ErrServer)
}
