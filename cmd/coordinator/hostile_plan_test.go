package main

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
)

// The hostile GROUP replies of issue 17 (defects 1 and 2): one reply must
// not move a plan's cursors for good, expire missing articles or plan past
// the group's real end.

// sparseLines are the overview lines of 1..to without every twentieth
// article (10, 30, 50...): the workers report those missing, so a set of
// missing articles waits for repair.
func sparseLines(group string, to int64) [][]byte {
	var out [][]byte
	for n := int64(1); n <= to; n++ {
		if !absent(n) {
			out = append(out, nntptest.Line(group, n))
		}
	}
	return out
}

func absent(n int64) bool { return n%20 == 10 }

// absentUpTo counts the articles sparseLines leaves out of 1..to.
func absentUpTo(to int64) int64 { return (to + 10) / 20 }

// setGroup changes what the server answers for group: its lines, and the
// raw GROUP reply when reply is set, for one GROUP command only when once.
func (h *hostile) setGroup(group string, lines [][]byte, reply string, once bool) {
	h.t.Helper()
	h.srv.Update(func(c *nntptest.Config) {
		c.Groups = slices.Clone(c.Groups)
		for i := range c.Groups {
			if c.Groups[i].Name == group {
				c.Groups[i].Lines, c.Groups[i].Reply, c.Groups[i].ReplyOnce = lines, reply, once
				return
			}
		}
		h.t.Fatalf("no group %q on the server", group)
	})
}

// stored reports whether the group's plain ranges tile 1..to and are all
// done, and how many headers they stored.
func (h *hostile) stored(group string, to int64) (bool, int64) {
	h.t.Helper()
	var plain []lease.Range
	for _, r := range h.ranges(group) {
		if !r.Repair {
			plain = append(plain, r)
		}
	}
	slices.SortFunc(plain, func(a, b lease.Range) int { return int(a.Start - b.Start) })
	next, headers := int64(1), int64(0)
	for _, r := range plain {
		if r.Start != next || r.State != lease.StateDone {
			return false, headers
		}
		next, headers = r.End+1, headers+r.Headers
	}
	return next == to+1, headers
}

// maxEnd is the highest article any of the group's ranges covers.
func (h *hostile) maxEnd(group string) int64 {
	end := int64(0)
	for _, r := range h.ranges(group) {
		end = max(end, r.End)
	}
	return end
}

// indexed starts a server with group at 1..2000 (100 of them absent), a
// plan of tail and history in ranges of 500, serve with args and two
// workers, and waits until the group is stored with its 100 missing
// articles waiting (the repair delay is an hour: they stay waiting).
func indexed(t *testing.T, db, group string, extra []nntptest.Group, args ...string) *hostile {
	t.Helper()
	h := newHostile(t, db, nntptest.Config{Groups: append([]nntptest.Group{{Name: group, Lines: sparseLines(group, 2000)}}, extra...)})
	h.mustCLI("group", "add", group, "--range-size", "500", "--chunk-size", "100", "--plan", "tail,history")
	h.start(append([]string{"--repair-delay", "1h"}, args...)...)
	h.workers(2)
	require.Eventually(t, func() bool {
		p := h.plan(group)
		ok, _ := h.stored(group, 2000)
		return p.High == 2000 && ok && p.Missing.Waiting == absentUpTo(2000)
	}, 30*time.Second, 20*time.Millisecond)
	p := h.plan(group)
	require.Equal(t, int64(2001), p.TailNext)
	require.Equal(t, int64(2001), p.HistoryNext)
	require.Zero(t, p.Lag)
	return h
}

// oneReply makes the server answer group's next GROUP with reply, and
// later ones from before, until the planner has polled it (its log says it
// held the reply back, or held reports what the reply did); then it
// answers from lines after. Only the planner sends
// GROUP meanwhile: every range is done, so nothing is fetched.
func (h *hostile) oneReply(group, reply string, held func(grouplease.PlanStatus) bool, before, after [][]byte) {
	h.t.Helper()
	h.setGroup(group, before, reply, true)
	require.Eventually(h.t, func() bool {
		// The log line stays; the plan shows the reply held for one poll.
		return h.logSays("not trusted until a later poll confirms them", group) || held(h.plan(group))
	}, 30*time.Second, 5*time.Millisecond)
	h.setGroup(group, after, "", false)
}

// TestHostileEmptyGroupReply is defect 1: one poll answers "211 0 500000
// 499999", RFC 3977's form of an empty group, then the group answers 1..4000
// again. No cursor moves, no waiting missing article is counted lost, the
// lag counts the articles not stored, 2001..4000 are planned and stored,
// and serve's log says the reply was not trusted. A group empty from the
// first poll on is shown held in status and gets no cursor.
func TestHostileEmptyGroupReply(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db string) {
		const group, never = "alt.empty", "alt.never"
		h := indexed(t, db, group, []nntptest.Group{{Name: never, Reply: "0 500000 499999 " + never}}, "--poll", "50ms")
		h.mustCLI("group", "add", never, "--range-size", "500", "--plan", "tail,history")

		// The workers stop, so the lag shows what waits to be stored.
		h.stopWorkers()
		h.oneReply(group, "0 500000 499999 "+group, func(p grouplease.PlanStatus) bool {
			return p.Held != nil || p.Low == 500000 // before the fix the reply moved Low
		}, sparseLines(group, 2000), sparseLines(group, 4000))
		require.Eventually(t, func() bool {
			p := h.plan(group)
			return p.High == 4000 && p.Held == nil
		}, 30*time.Second, 20*time.Millisecond)
		p := h.plan(group)
		require.Equal(t, int64(1), p.Low, "the low never moved")
		require.Equal(t, int64(4001), p.TailNext, "the tail planned on from 2001")
		require.Equal(t, int64(2001), p.HistoryNext)
		require.Equal(t, int64(2000), p.Lag, "2001..4000 are planned, not stored")
		require.Equal(t, grouplease.Missing{Waiting: absentUpTo(2000)}, p.Missing, "no waiting article counted lost")

		h.workers(2)
		require.Eventually(t, func() bool {
			ok, _ := h.stored(group, 4000)
			p := h.plan(group)
			return ok && p.Lag == 0 && p.Missing.Waiting == absentUpTo(4000)
		}, 30*time.Second, 20*time.Millisecond)
		_, headers := h.stored(group, 4000)
		require.Equal(t, 4000-absentUpTo(4000), headers, "every article there is stored")
		p = h.plan(group)
		require.Equal(t, grouplease.Missing{Waiting: absentUpTo(4000)}, p.Missing)
		require.Equal(t, int64(4001), p.TailNext)
		require.True(t, h.logSays("not trusted until a later poll confirms them", "500000..499999", group), "serve's log says the reply was held back")

		// A group empty from its first poll: held, no split, in status too.
		require.Eventually(t, func() bool { return h.plan(never).Held != nil }, 30*time.Second, 20*time.Millisecond)
		p = h.plan(never)
		require.Equal(t, &grouplease.Watermarks{Low: 500000, High: 499999}, p.Held)
		require.False(t, p.Polled, "no reply trusted")
		require.Zero(t, p.TailNext)
		require.Empty(t, h.ranges(never))
		var held map[string]any
		for _, pl := range h.statusJSON()["plans"].([]any) {
			if pl := pl.(map[string]any); pl["group"] == never {
				held, _ = pl["held"].(map[string]any)
			}
		}
		require.Equal(t, map[string]any{"low": float64(500000), "high": float64(499999)}, held, "status --json shows the reply held back")
		require.Regexp(t, never+`\s+-\s+-\s+-`, h.mustCLI("status"), "status shows no watermarks yet")
	})
}

// TestHostileHighJump is defect 2: one poll answers a high of 2^62, then
// the group answers 1..4000 again. Nothing is planned past the real end, no
// article is reported missing that is not, and serve's log says the reply
// was not trusted.
func TestHostileHighJump(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db string) {
		const group = "alt.jump"
		h := indexed(t, db, group, nil, "--poll", "50ms")
		h.oneReply(group, "2000 1 4611686018427387904 "+group, func(p grouplease.PlanStatus) bool {
			return p.Held != nil || p.High == grouplease.MaxArticle // before the fix the reply was High
		}, sparseLines(group, 2000), sparseLines(group, 4000))
		require.LessOrEqual(t, h.maxEnd(group), int64(2000), "one reply of 2^62 plans nothing")

		require.Eventually(t, func() bool {
			ok, _ := h.stored(group, 4000)
			p := h.plan(group)
			return ok && p.High == 4000 && p.Held == nil && p.Lag == 0 && p.Missing.Waiting == absentUpTo(4000)
		}, 30*time.Second, 20*time.Millisecond)
		require.Equal(t, int64(4000), h.maxEnd(group), "nothing planned past the real end")
		p := h.plan(group)
		require.Equal(t, int64(4001), p.TailNext)
		require.Equal(t, grouplease.Missing{Waiting: absentUpTo(4000)}, p.Missing, "only the absent articles are missing")
		_, headers := h.stored(group, 4000)
		require.Equal(t, 4000-absentUpTo(4000), headers)
		require.True(t, h.logSays("not trusted until a later poll confirms them", "1..4611686018427387904", group))
	})
}

// TestHostileResetPlan: a provider says for several polls that the group
// is empty from 500000 on (confirmed, so its articles below expire and the
// cursors move up), then comes back renumbered as 1..4000. The tail waits
// at 500000 until an operator runs group plan --reset: then 2001..4000 are
// planned and stored, and the articles counted lost by expiry wait again.
func TestHostileResetPlan(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db string) {
		const group = "alt.reset"
		h := indexed(t, db, group, nil, "--poll", "50ms")
		h.setGroup(group, sparseLines(group, 2000), "0 500000 499999 "+group, false)
		require.Eventually(t, func() bool {
			p := h.plan(group)
			return p.Low == 500000 && p.TailNext == 500000 && p.Missing.Lost == absentUpTo(2000)
		}, 30*time.Second, 20*time.Millisecond, "two polls agree: the articles below 500000 expired")
		require.True(t, h.logSays("not trusted until a later poll confirms them", "500000..499999", group))

		h.setGroup(group, sparseLines(group, 4000), "", false)
		require.Eventually(t, func() bool { return h.plan(group).High == 4000 }, 30*time.Second, 20*time.Millisecond)
		require.Equal(t, int64(500000), h.plan(group).TailNext, "the tail waits past the group's end")
		require.Equal(t, int64(2000), h.maxEnd(group))

		out := h.mustCLI("group", "plan", group, "--reset")
		require.Contains(t, out, "reset")
		require.Contains(t, out, "100 articles counted lost by expiry wait again")
		require.Eventually(t, func() bool {
			ok, _ := h.stored(group, 4000)
			p := h.plan(group)
			return ok && p.TailNext == 4001 && p.Lag == 0 && p.Missing.Waiting == absentUpTo(4000)
		}, 30*time.Second, 20*time.Millisecond)
		p := h.plan(group)
		require.Equal(t, grouplease.Missing{Waiting: absentUpTo(4000)}, p.Missing, "nothing counted lost")
		require.Equal(t, grouplease.GroupPlan{Tail: true, History: true}, p.GroupPlan, "the plan is kept")
		_, headers := h.stored(group, 4000)
		require.Equal(t, 4000-absentUpTo(4000), headers)

		// Bad uses are usage errors.
		for _, args := range [][]string{{"group", "plan", "alt.nope", "--reset"}, {"group", "add", "alt.new", "--reset"}} {
			_, err := h.cli(args...)
			require.Error(t, err, "%q", args)
		}
		_, err := h.store.Group(t.Context(), "alt.new")
		require.ErrorIs(t, err, edgeindex.ErrNotFound, "a refused add adds nothing")
	})
}
