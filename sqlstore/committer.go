package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// errClosed answers a call made after Close.
var errClosed = errors.New("sqlstore: the store is closed")

// maxRound bounds the calls one transaction takes.
const maxRound = 128

// call is one caller's request to a committer, and its answer.
type call[Req, Res any] struct {
	ctx  context.Context
	req  Req
	res  Res
	err  error
	done chan struct{}
}

// committer runs concurrent calls of one kind in rounds, a transaction and
// a commit per round, the way River's completer stores completions: its
// loop takes every call waiting when it is free (up to maxRound) and hands
// them to run. Nothing waits for a round to fill: a call alone runs at
// once; under load, the calls that arrive while a round's transaction runs
// make the next round, so commits per call fall as load rises.
//
// run answers every call it is given (res or err). A round's transaction
// runs under the store's context, not a caller's: one caller giving up must
// not undo the others' writes. A caller whose context ends before its round
// starts is answered with the context's error and never written; one whose
// context ends later is answered with it at once, and its write, like a
// write whose answer is lost on the wire, may or may not have committed.
type committer[Req, Res any] struct {
	calls chan []*call[Req, Res] // one caller's calls, taken into one round
	stop  <-chan struct{}        // closed by Close
	run   func(ctx context.Context, round []*call[Req, Res])
}

// startCommitter starts run's loop, which stops when ctx ends.
func startCommitter[Req, Res any](ctx context.Context, wg *sync.WaitGroup, run func(context.Context, []*call[Req, Res])) *committer[Req, Res] {
	c := &committer[Req, Res]{calls: make(chan []*call[Req, Res]), stop: ctx.Done(), run: run}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.loop(ctx)
	}()
	return c
}

// do makes a call and waits for its answer.
func (c *committer[Req, Res]) do(ctx context.Context, req Req) (Res, error) {
	cls, err := c.doMany(ctx, []Req{req})
	if err != nil {
		var zero Res
		return zero, err
	}
	return cls[0].res, cls[0].err
}

// doMany makes a call of each of reqs, all in the same round (so a round
// may hold up to maxRound-1 calls more than maxRound), and waits for
// their answers. It fails, with nothing answered, only when ctx ends or
// the committer is closed; a call's own error is in its err.
func (c *committer[Req, Res]) doMany(ctx context.Context, reqs []Req) ([]*call[Req, Res], error) {
	cls := make([]*call[Req, Res], len(reqs))
	for i, req := range reqs {
		cls[i] = &call[Req, Res]{ctx: ctx, req: req, done: make(chan struct{})}
	}
	select {
	case c.calls <- cls:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.stop:
		return nil, errClosed
	}
	for _, cl := range cls {
		select {
		case <-cl.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return cls, nil
}

func (c *committer[Req, Res]) loop(ctx context.Context) {
	round := make([]*call[Req, Res], 0, maxRound)
	for {
		round = round[:0]
		select {
		case cls := <-c.calls:
			round = append(round, cls...)
		case <-ctx.Done():
			return
		}
	more:
		for len(round) < maxRound {
			select {
			case cls := <-c.calls:
				round = append(round, cls...)
			default:
				break more
			}
		}
		live := round[:0:0]
		for _, cl := range round {
			if err := cl.ctx.Err(); err != nil {
				cl.err = err
				close(cl.done)
				continue
			}
			live = append(live, cl)
		}
		if len(live) > 0 {
			c.runSafely(ctx, live)
		}
		for _, cl := range live {
			close(cl.done)
		}
	}
}

// runSafely runs a round, answering every call with an error if run panics,
// so that no caller waits for ever and the loop goes on.
func (c *committer[Req, Res]) runSafely(ctx context.Context, round []*call[Req, Res]) {
	defer func() {
		if p := recover(); p != nil {
			for _, cl := range round {
				cl.err = fmt.Errorf("sqlstore: a round's write panicked: %v", p)
			}
		}
	}()
	c.run(ctx, round)
}

// commitRound runs a round's write with tx, and when it fails runs each call
// alone (its answer cleared first), so one call the database refuses (a
// value it cannot store) fails alone and a round never answers for
// another's fault. tx must have written nothing when it fails.
func commitRound[Req, Res any](ctx context.Context, round []*call[Req, Res], tx func(context.Context, []*call[Req, Res]) error) {
	if len(round) == 0 {
		return
	}
	err := tx(ctx, round)
	if err == nil {
		return
	}
	if len(round) == 1 {
		var zero Res
		round[0].res, round[0].err = zero, err
		return
	}
	for i := range round {
		var zero Res
		round[i].res, round[i].err = zero, nil
		commitRound(ctx, round[i:i+1], tx)
	}
}
