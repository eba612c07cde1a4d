package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/connlease"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
)

// serve's source takes its connections' slots from the database, the
// start-up check's first; status shows them per provider and coordinator,
// and they are given back when serve stops.
func TestConnectionBudgetStatusShowsSlots(t *testing.T) {
	t.Parallel()
	srv, err := nntptest.New(nntptest.Config{MaxConns: 2, MaxConnsReply: 502,
		Groups: []nntptest.Group{{Name: "alt.test", Lines: nntptest.Lines("alt.test", 1, 100)}}})
	require.NoError(t, err)
	defer srv.Close()
	data := t.TempDir()
	serve := startServe(t, data, "--source", srv.URL()+"?conns=2", "--id", "coord-a")
	out, err := run(t, data, "status", "--json")
	require.NoError(t, err)
	var st struct {
		Slots   []connlease.Lease      `json:"connSlots"`
		Budgets []connlease.BudgetSize `json:"connBudgets"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Len(t, st.Slots, 1, "the check's connection holds a slot")
	require.Equal(t, []connlease.BudgetSize{{Provider: "", Size: 2}}, st.Budgets)
	require.Equal(t, "coord-a", st.Slots[0].Holder)
	require.Equal(t, "", st.Slots[0].Provider)
	out, err = run(t, data, "status")
	require.NoError(t, err)
	require.Contains(t, out, "PROVIDER")
	require.Regexp(t, `-\s+coord-a\s+1\s+\[0\]`, out)
	require.Regexp(t, `PROVIDER\s+BUDGET\s+HELD\s+FREE\n-\s+2\s+1\s+1\n`, out)

	// A second coordinator told another size for the account does not
	// start while the first holds a slot of it.
	var errb bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = NewMain(io.Discard, &errb).Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data,
		"--source", srv.URL() + "?conns=3", "--id", "coord-b"})
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	require.ErrorContains(t, err, "is 2 connections (1 held), not this coordinator's 3")
	serve.stop(t)
	out, err = run(t, data, "status", "--json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Empty(t, st.Slots, "serve gives its slots back when it stops")
	require.Zero(t, srv.Stats().Refused)
}
