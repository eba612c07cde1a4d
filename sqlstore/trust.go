package sqlstore

import "github.com/edgeindex/edgeindex/grouplease"

// trust returns the watermarks planning uses for a GROUP reply, given the
// plan's trusted ones (low and high) and the previous reply when it
// waits (pending_low and pending_high). It reports false when nothing
// is trusted: the reply of an empty group before any other was trusted.
//
// A reply moves nothing for good on its own. A low that rises above the
// trusted one is trusted only as far as the previous reply rose too; a
// high that jumps more than bound above the trusted one likewise. An
// empty group's reply (grouplease.Watermarks.Empty) never moves the high
// and never lowers the low: its numbers say only where articles would
// start. So the trusted value is the one two polls in a row agree on,
// and one odd reply, or replies that alternate, move no cursor and
// expire nothing. A low or high that falls in a reply with articles is
// trusted at once: cursors never go back, and a lower low expires less.
func trust(p planRow, reply grouplease.Watermarks, bound int64) (grouplease.Watermarks, bool) {
	if !p.Low.Valid || !p.High.Valid {
		// The first poll has nothing to compare against: it is trusted,
		// unless the group is empty now. After a reset the watermarks
		// trusted before it wait as the previous reply: a first reply
		// more than bound from their high waits for the next poll to
		// agree with it, so one odd reply does not undo the reset.
		if reply.Empty() {
			return reply, false
		}
		prev := grouplease.Watermarks{Low: p.PendingLow.Int64, High: p.PendingHigh.Int64}
		if p.PendingLow.Valid && p.PendingHigh.Valid && !prev.Empty() && (reply.High-prev.High > bound || prev.High-reply.High > bound) {
			return reply, false
		}
		return reply, true
	}
	w := grouplease.Watermarks{Low: p.Low.Int64, High: p.High.Int64}
	// The previous reply, as far as it is known: the one that waits, or
	// the trusted watermarks when it was trusted whole.
	prev, prevEmpty := w, false
	if p.PendingLow.Valid && p.PendingHigh.Valid {
		prev = grouplease.Watermarks{Low: p.PendingLow.Int64, High: p.PendingHigh.Int64}
		prevEmpty = prev.Empty()
	}
	switch {
	case max(reply.Low, 1) > max(w.Low, 1): // article 0 does not exist
		w.Low = max(w.Low, min(reply.Low, prev.Low))
	case !reply.Empty():
		w.Low = reply.Low
	}
	// The jump is measured from the highest high the plan has relied on:
	// the trusted one, the one the tail has planned up to, or below the
	// trusted low, whichever is higher. A lower high trusted since (a
	// lagging server behind a balancer) does not make the real high look
	// like a jump.
	from := max(w.High, w.Low-1, reached(p))
	switch {
	case reply.Empty():
		// The high stays.
	case reply.High-from <= bound: // both in -1..MaxArticle: no overflow
		w.High = reply.High
	case !prevEmpty && reply.High-prev.High <= bound && prev.High-reply.High <= bound:
		// Two replies in a row that agree confirm the jump as far as
		// both go; two odd ones that differ by more than the bound
		// confirm nothing.
		w.High = max(w.High, min(reply.High, prev.High))
	}
	return w, true
}

// reached is the highest high the tail has planned from: it plans up to
// high − Margin, and its cursor is one past that. 0 before the first split.
func reached(p planRow) int64 {
	if !p.TailNext.Valid {
		return 0
	}
	planned := min(p.TailNext.Int64-1, grouplease.MaxArticle)
	return planned + min(p.Margin, grouplease.MaxArticle-planned) // at most MaxArticle
}

// highJump is how far above the trusted high one GROUP reply's high is
// trusted: Config.HighJump, or by default 10 × the group's range size ×
// PlanAhead, at most MaxArticle.
func (s *Store) highJump(g grouplease.Group) int64 {
	if s.cfg.HighJump > 0 {
		return min(s.cfg.HighJump, grouplease.MaxArticle)
	}
	ahead := int64(s.cfg.PlanAhead) // at least 1 (validate)
	if ahead > grouplease.MaxArticle/10 {
		return grouplease.MaxArticle
	}
	per := 10 * ahead
	if g.RangeSize <= 0 || g.RangeSize > grouplease.MaxArticle/per {
		return grouplease.MaxArticle
	}
	return g.RangeSize * per
}
