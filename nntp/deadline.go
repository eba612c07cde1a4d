package nntp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// deadlineConn sets a deadline of timeout before every read and every
// write, so a server that stalls fails the call instead of hanging it, and
// never one past until when until is set, so a server that trickles bytes
// fails it too. It counts the bytes read, and refuses to read past limit
// when limit is set.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
	until   time.Time // zero: only timeout applies
	n       int64     // bytes read since the count was reset
	limit   int64     // the most bytes to read; 0: no bound
}

func (d *deadlineConn) deadline() time.Time {
	t := time.Now().Add(d.timeout)
	if !d.until.IsZero() && d.until.Before(t) {
		t = d.until
	}
	return t
}

func (d *deadlineConn) Read(p []byte) (int, error) {
	if d.limit > 0 {
		if d.n >= d.limit {
			return 0, fmt.Errorf("%w: more than %d bytes read", ErrTooLarge, d.limit)
		}
		p = p[:min(int64(len(p)), d.limit-d.n)]
	}
	if err := d.Conn.SetReadDeadline(d.deadline()); err != nil {
		return 0, err
	}
	n, err := d.Conn.Read(p)
	d.n += int64(n)
	return n, err
}

func (d *deadlineConn) Write(p []byte) (int, error) {
	if err := d.Conn.SetWriteDeadline(d.deadline()); err != nil {
		return 0, err
	}
	return d.Conn.Write(p)
}

// bound starts a call that must end within within, reading at most limit
// bytes (0: no bound); unbound ends it.
func (d *deadlineConn) bound(within time.Duration, limit int64) {
	d.until, d.n, d.limit = time.Now().Add(within), 0, limit
}

func (d *deadlineConn) unbound() { d.until, d.limit = time.Time{}, 0 }

// deadlineErr wraps err with ErrDeadline when it is a timeout at or past
// until: the call's whole deadline passed, not only one read's.
func (d *deadlineConn) deadlineErr(err error) error {
	if err == nil || d.until.IsZero() || time.Now().Before(d.until) || !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrDeadline, err)
}
