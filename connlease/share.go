package connlease

import (
	"context"
	"slices"
	"strings"
	"time"
)

// share is what one refresh of the demand decided for this holder.
type share struct {
	share   int  // the fair share: max(1, size / holders)
	yields  int  // slots still to give back at their connections' next put
	starved bool // another holder that wants a slot holds less than share
}

// plan computes self's share of a budget of size among the holders of hs
// (those that hold a slot or wanted one lately) and self, which holds or
// waits for a slot; mine is how many slots self holds and has not yet
// yielded. A slot that said Yield still counts in hs until its put has
// given it back, so mine is counted here, not read from hs: a refresh
// between the yield and the give-back must not make the slots kept at
// the share yield too.
//
// The starved holders (those that want a slot and hold less than the
// share) lack deficit slots between them, less those self has yielded
// and not yet given back. A holder over its share gives back the slots
// above it, at most the deficit; one at its share keeps its slots, so
// the slots settle and stop moving. When there are more holders than
// slots (the share is 1 and some must have none), the holders with a
// slot, ordered by name from just after the first starved holder, yield
// one each while their rank is below the deficit: one starved holder
// costs one reconnection, and the next starved holder's turn falls on
// the next holder, so the holders take turns.
func plan(size int, self string, hs []Holding, mine int) share {
	n, inHs := 1, 0
	for _, h := range hs {
		if h.Holder == self {
			inHs = h.Held
		} else if h.Held > 0 || h.Wants {
			n++
		}
	}
	sh := share{share: max(1, size/n)}
	deficit, first := 0, ""
	for _, h := range hs {
		if h.Holder != self && h.Wants && h.Held < sh.share {
			if !sh.starved || h.Holder < first {
				first = h.Holder
			}
			sh.starved = true
			deficit += sh.share - h.Held
		}
	}
	deficit -= max(0, inHs-mine) // yielded, on their way back
	switch {
	case !sh.starved || deficit <= 0:
	case mine > sh.share:
		sh.yields = min(mine-sh.share, deficit)
	case n > size && mine > 0:
		var holding []string
		for _, h := range hs {
			if h.Holder != self && h.Held > 0 {
				holding = append(holding, h.Holder)
			}
		}
		holding = append(holding, self)
		// By name, from just after the first starved holder, wrapping.
		after := func(x string) bool { return x > first }
		slices.SortFunc(holding, func(x, y string) int {
			if after(x) != after(y) {
				if after(x) {
					return -1
				}
				return 1
			}
			return strings.Compare(x, y)
		})
		if slices.Index(holding, self) < deficit {
			sh.yields = 1
		}
	}
	return sh
}

// wantsWithin is how recent a want counts in the demand: a holder that
// waits asks again every Poll (with jitter up to half of it more).
// A second at least, so that a holder slow to ask again (a loaded machine)
// still counts as waiting.
func (b *SharedBudget) wantsWithin() time.Duration { return max(3*b.cfg.Poll, time.Second) }

// refresher reads the provider's demand every Poll while this SharedBudget holds
// or waits for a slot, and sets what the slots yield and whether Acquire
// holds back.
func (b *SharedBudget) refresher() {
	defer close(b.refreshed)
	tick := time.NewTicker(b.cfg.Poll)
	defer tick.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-tick.C:
		}
		b.mu.Lock()
		active := len(b.held) > 0 || b.waiting > 0
		b.mu.Unlock()
		if !active {
			// Kept as it is: a SharedBudget that has just given a slot back may
			// hold none and wait for none a moment before its next Acquire,
			// which must still give way.
			continue
		}
		// b.ctx ends at Close: Close does not wait out a Demand stuck on
		// a slow database before it gives the slots back.
		rctx, rcancel := context.WithTimeout(b.ctx, b.cfg.Poll+takeTimeout)
		hs, err := b.cfg.Store.Demand(rctx, b.cfg.Provider, b.wantsWithin())
		rcancel()
		if err != nil {
			// No fairness until the store answers again: keep what holds.
			b.cfg.Logger.Warn("connlease: read the demand on the budget", "provider", b.cfg.Provider, "err", err)
			b.mu.Lock()
			b.setShareLocked(share{})
			b.mu.Unlock()
			continue
		}
		b.mu.Lock()
		b.setShareLocked(plan(b.cfg.Size, b.cfg.Holder, hs, b.keptLocked()))
		b.mu.Unlock()
	}
}

// keptLocked counts the slots held and not yielded. b.mu is held.
func (b *SharedBudget) keptLocked() int {
	n := 0
	for s := range b.held {
		if !s.yielded {
			n++
		}
	}
	return n
}

// setShareLocked records sh: Yield hands out sh.yields, and Acquire holds
// back at sh.share while another holder is starved. Once none is, this
// SharedBudget no longer gives way. b.mu is held.
func (b *SharedBudget) setShareLocked(sh share) {
	b.share = sh
	if !sh.starved {
		b.gaveWay = false
	}
}

// holdBack reports whether Acquire waits without asking the store: another
// holder is starved, and this SharedBudget holds its share or more, or gave a
// slot back for it (with more holders than slots it holds none then, and
// must not take the slot straight back). b.mu is held.
func (b *SharedBudget) holdBack() bool {
	return b.share.holdsBack(len(b.held), b.gaveWay)
}

// holdsBack is holdBack for a holder of held slots under sh.
func (sh share) holdsBack(held int, gaveWay bool) bool {
	return sh.starved && (held >= sh.share || gaveWay)
}

// Yield reports whether the connection on s should be closed and s given
// back when it is next put back, rather than kept: this SharedBudget holds more
// than its fair share while another holder that wants a slot holds less
// (nntp's pool asks at every put). Of the slots held, at most the excess
// the last refresh of the demand counted say true. A slot that said true
// says true again, and no longer counts as kept (plan).
func (s *slot) Yield() bool {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case s.yielded:
		return true
	case s.released || b.share.yields <= 0:
		return false
	}
	b.share.yields--
	s.yielded = true
	b.gaveWay = true
	return true
}
