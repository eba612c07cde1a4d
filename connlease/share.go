package connlease

import (
	"context"
	"time"
)

// share is what one refresh of the demand decided for this holder.
type share struct {
	share   int  // the fair share: max(1, size / holders)
	yields  int  // slots to give back at their connections' next put
	starved bool // another holder that wants a slot holds less than share
}

// plan computes self's share of a budget of size among the holders of hs
// (those that hold a slot or wanted one lately) and self, which holds or
// waits for a slot. A holder over its share gives back the slots above it while
// another that wants one holds less than the share; one at its share
// keeps its slots, so the slots settle and stop moving. When there are
// more holders than slots (the share is 1 and some must have none), a
// holder with a slot gives it back while another has none and wants one:
// they take turns, at most one give-back per holder per refresh.
func plan(size int, self string, hs []Holding) share {
	n, mine := 1, 0
	for _, h := range hs {
		if h.Holder == self {
			mine = h.Held
		} else if h.Held > 0 || h.Wants {
			n++
		}
	}
	sh := share{share: max(1, size/n)}
	for _, h := range hs {
		if h.Holder != self && h.Wants && h.Held < sh.share {
			sh.starved = true
		}
	}
	switch {
	case !sh.starved:
	case mine > sh.share:
		sh.yields = mine - sh.share
	case n > size && mine > 0:
		sh.yields = 1
	}
	return sh
}

// wantsWithin is how recent a want counts in the demand: a holder that
// waits asks again every Poll (with jitter up to half of it more).
// A second at least, so that a holder slow to ask again (a loaded machine)
// still counts as waiting.
func (b *Budget) wantsWithin() time.Duration { return max(3*b.cfg.Poll, time.Second) }

// refresher reads the provider's demand every Poll while this Budget holds
// or waits for a slot, and sets what the slots yield and whether Acquire
// holds back.
func (b *Budget) refresher() {
	defer close(b.refreshed)
	tick := time.NewTicker(b.cfg.Poll)
	defer tick.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
		}
		b.mu.Lock()
		active := len(b.held) > 0 || b.waiting > 0
		b.mu.Unlock()
		if !active {
			// Kept as it is: a Budget that has just given a slot back may
			// hold none and wait for none a moment before its next Acquire,
			// which must still give way.
			continue
		}
		rctx, rcancel := context.WithTimeout(ctx, b.cfg.Poll+takeTimeout)
		hs, err := b.cfg.Store.Demand(rctx, b.cfg.Provider, b.wantsWithin())
		rcancel()
		if err != nil {
			// No fairness until the store answers again: keep what holds.
			b.cfg.Logger.Warn("connlease: read the demand on the budget", "provider", b.cfg.Provider, "err", err)
			b.setShare(share{})
			continue
		}
		b.setShare(plan(b.cfg.Size, b.cfg.Holder, hs))
	}
}

// setShare records sh: Yield hands out sh.yields, and Acquire holds back
// at sh.share while another holder is starved. Once none is, this Budget
// no longer gives way.
func (b *Budget) setShare(sh share) {
	b.yields.Store(int64(sh.yields))
	b.mu.Lock()
	b.share = sh
	if !sh.starved {
		b.gaveWay = false
	}
	b.mu.Unlock()
}

// holdBack reports whether Acquire waits without asking the store: another
// holder is starved, and this Budget holds its share or more, or gave a
// slot back for it (with more holders than slots it holds none then, and
// must not take the slot straight back). b.mu is held.
func (b *Budget) holdBack() bool {
	return b.share.starved && (len(b.held) >= b.share.share || b.gaveWay)
}

// Yield reports whether the connection on s should be closed and s given
// back when it is next put back, rather than kept: this Budget holds more
// than its fair share while another holder that wants a slot holds less
// (nntp's pool asks at every put). Of the slots held, at most the excess
// the last refresh of the demand counted say true.
func (s *slot) Yield() bool {
	for {
		v := s.b.yields.Load()
		if v <= 0 {
			return false
		}
		if s.b.yields.CompareAndSwap(v, v-1) {
			s.b.mu.Lock()
			s.b.gaveWay = true
			s.b.mu.Unlock()
			return true
		}
	}
}
