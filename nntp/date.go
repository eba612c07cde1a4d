package nntp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex/grouplease"
)

// Bounds of the date search (FindDate).
const (
	// MaxDateCalls is the most OVER commands one FindDate sends. The
	// search needs about log2(high − low) − 5: 25 for 10^9 articles, 57
	// for grouplease.MaxArticle.
	MaxDateCalls = 64
	// DateWindow is how many article numbers one probe asks for: the
	// first present one among them stands for the probe, so a run of
	// fewer absent numbers (cancelled articles) costs nothing.
	DateWindow = 64
	// DateTolerance is how much older than the date an article may be
	// and still count as not older: posts propagate late, so their Dates
	// are slightly out of order, and one late post must not send the
	// search below the date's articles.
	DateTolerance = time.Hour
	// maxDateWindowBytes bounds one probe's reply, and maxDateWindowLines
	// its lines (numbers outside the window included).
	maxDateWindowBytes = 4 << 20
	maxDateWindowLines = 4 * DateWindow
	// maxDateField bounds the Date field parsed.
	maxDateField = 256
)

// ErrDateSearch means a date search could not settle: not within
// MaxDateCalls OVER commands (the search is built to settle within them
// for any group; this is the bound that makes sure), or on no article
// with a Date it could read.
var ErrDateSearch = errors.New("nntp: date search did not settle")

var _ grouplease.DateFinder = (*Source)(nil)

// FindDate finds the first article of group posted on or after since, as
// NNTmux's daytopost does: a bisection over article numbers that reads the
// Date of one article at a time with OVER, on one connection with GROUP
// sent once. It returns the group's high + 1, and no date, when every
// article is older.
//
// Each probe asks for a window of DateWindow numbers and takes the first
// present article in it, so a hole (cancelled or expired numbers) shorter
// than the window is stepped over. A window with no article is followed
// by probes further right, at windows 1, 2, 4, ... windows away, for an
// article that says which side of the date the window lies on, so that a
// long hole in the middle of a group does not send the search above the
// articles just below it. These probes take only the calls the bisection
// can spare: when they run out, or reach the bisection's upper end, the
// empty window counts as older and the search goes on above it. That is
// right for the articles expired below the first present one (a low
// watermark reported below them), where every window is empty; such a
// search spends up to MaxDateCalls on them instead of about 25.
//
// An article dated at most DateTolerance before since counts as not
// older, so that a post that propagated late (its Date older than its
// number says) does not mislead the bisection. One dated more than
// DateTolerance after the Config.Clock's now, a client's clock far ahead,
// counts as undated, so that it does not stand for its window. A line
// whose Date does not parse (RFC 5322 and the usual Usenet variants are
// accepted), or that is not an overview line of the window, counts as
// absent. Windows that held overview lines of which not one had a Date
// that counts are an error wrapping ErrDateSearch, not "every article
// older": a server whose Dates cannot be read must not silently get no
// history.
//
// The search sends at most MaxDateCalls OVER commands whatever the server
// answers; it needs log2(high − low) − 5 of them when it meets no long
// hole. Every reply is bounded: a window at most maxDateWindowLines lines
// and maxDateWindowBytes bytes, a line at most overview.MaxLineBytes
// (longer ones are skipped unread), and the whole search must end within
// four times Config.Timeout.
func (s *Source) FindDate(ctx context.Context, group string, since time.Time) (grouplease.DatePoint, error) {
	var pt grouplease.DatePoint
	err := s.with(ctx, 4*s.cfg.Timeout, MaxDateCalls*maxDateWindowBytes+readBufSize, func(c *conn) error {
		g, err := c.selectGroup(group, true)
		if err != nil {
			return err
		}
		d := dateSearch{c: c, s: s, cutoff: since.Add(-DateTolerance), ceiling: s.cfg.Clock.Now().Add(DateTolerance)}
		pt, err = d.find(g)
		pt.Calls = d.calls
		if err == nil && d.lines > 0 && !d.dated {
			err = fmt.Errorf("%w: %d overview lines, not one with a Date that parses and is not in the future", ErrDateSearch, d.lines)
		}
		return err
	})
	if err != nil {
		return pt, fmt.Errorf("nntp: find date %s in %s: %w", since.UTC().Format(time.RFC3339), group, err)
	}
	return pt, nil
}

// dateSearch is one FindDate on its connection.
type dateSearch struct {
	c       *conn
	s       *Source
	cutoff  time.Time // an article dated before it is older
	ceiling time.Time // an article dated after it is in the future: undated
	calls   int
	lines   int  // overview lines of a window read
	dated   bool // whether one of them had a Date that counts
}

// find bisects [lo, hi): every present article below lo is older, and hi
// is a present article not older (date) or the high + 1. Each probe
// brings the excess of hi − lo over DateWindow down by half at least,
// and a last window of at most 2 × DateWindow numbers settles it.
func (d *dateSearch) find(g GroupInfo) (grouplease.DatePoint, error) {
	low, high := max(g.Low, 1), min(g.High, grouplease.MaxArticle)
	if g.Empty() || high < low {
		return grouplease.DatePoint{Article: max(high, 0) + 1}, nil
	}
	lo, hi := low, high+1
	var hiDate time.Time
	for hi-lo > 2*DateWindow {
		mid := lo + (hi-lo-DateWindow)/2
		n, date, found, newer, err := d.first(mid, mid+DateWindow-1)
		switch {
		case err != nil:
			return grouplease.DatePoint{}, err
		case !found:
			// An empty window: a present article further right says
			// which side of the date it lies on; with none, it counts
			// as older (see FindDate).
			r, rdate, rfound, rnewer, err := d.right(mid+DateWindow, lo, hi)
			switch {
			case err != nil:
				return grouplease.DatePoint{}, err
			case !rfound:
				lo = mid + DateWindow
			case !rnewer:
				lo = r + 1
			default:
				hi, hiDate = r, rdate
			}
		case !newer:
			lo = n + 1
		default:
			hi, hiDate = n, date
		}
	}
	if lo < hi {
		n, date, _, newer, err := d.first(lo, hi-1)
		if err != nil {
			return grouplease.DatePoint{}, err
		}
		if newer {
			return grouplease.DatePoint{Article: n, Date: date}, nil
		}
	}
	return grouplease.DatePoint{Article: hi, Date: hiDate}, nil
}

// need is how many probes the bisection of a span of n numbers sends at
// most, its last window included.
func need(n int64) int {
	k := 1
	for ; n > 2*DateWindow; k++ {
		n -= (n - DateWindow) / 2
	}
	return k
}

// right looks for a present article right of an empty window, from on:
// the windows at from + DateWindow·(2^k − 1), k = 0, 1, ..., below hi,
// the first holding a present article with a Date standing for them. It
// probes only while the calls left leave the bisection of [lo, hi) all
// it needs, so it never makes the search fail; found is false when it
// stopped without an article.
func (d *dateSearch) right(from, lo, hi int64) (n int64, date time.Time, found, newer bool, err error) {
	for step := int64(0); from+step < hi; step = 2*step + DateWindow {
		if d.calls+2+need(hi-lo) > MaxDateCalls { // +2: a probe may be OVER then XOVER
			return 0, time.Time{}, false, false, nil
		}
		a := from + step
		n, date, found, newer, err = d.first(a, min(a+DateWindow, hi)-1)
		if err != nil || found {
			return n, date, found, newer, err
		}
	}
	return 0, time.Time{}, false, false, nil
}

// first sends OVER from-to and returns the first article in it with a
// Date not older than the cutoff (newer), or, when there is none, the
// last present one whose Date parses; found is false when none is.
func (d *dateSearch) first(from, to int64) (n int64, date time.Time, found, newer bool, err error) {
	if d.calls >= MaxDateCalls {
		return 0, time.Time{}, false, false, fmt.Errorf("%w within %d OVER commands", ErrDateSearch, MaxDateCalls)
	}
	last, lines := from-1, 0
	line := func(l []byte) error {
		lines++
		if lines > maxDateWindowLines {
			return fmt.Errorf("%w: more than %d lines for a window of %d articles", ErrProtocol, maxDateWindowLines, to-from+1)
		}
		k, ok := overviewNumber(l)
		if !ok || k <= last || k > to || newer {
			return nil
		}
		last = k
		d.lines++
		t, ok := overviewDate(l)
		if !ok || t.After(d.ceiling) {
			return nil // undated, or dated by a clock ahead: as if absent
		}
		d.dated = true
		// The first not older, or else the last older: all before it are.
		n, date, found, newer = k, t, true, !t.Before(d.cutoff)
		return nil
	}
	skipped := func() error { return line(nil) } // a line too long counts too
	d.c.lim = blockLimits{total: maxDateWindowBytes, skip: skipped}
	defer func() { d.c.lim = blockLimits{} }()
	d.calls++
	xover := d.s.pool.xover.Load()
	err = d.c.over(xover, from, to, line)
	if errors.Is(err, errUnknownCommand) && d.calls < MaxDateCalls {
		d.s.pool.xover.Store(true)
		d.calls++
		err = d.c.over(true, from, to, line)
	}
	if err != nil {
		return 0, time.Time{}, false, false, err
	}
	return n, date, found, newer, nil
}

// overviewDate parses the Date field (the fourth) of an overview line.
func overviewDate(l []byte) (time.Time, bool) {
	for range 3 {
		i := bytes.IndexByte(l, '\t')
		if i < 0 {
			return time.Time{}, false
		}
		l = l[i+1:]
	}
	if i := bytes.IndexByte(l, '\t'); i >= 0 {
		l = l[:i]
	}
	if len(l) > maxDateField {
		return time.Time{}, false
	}
	return ParseDate(string(l))
}

// dateLayouts are the Date forms seen on Usenet that net/mail does not
// take, tried in order once a trailing comment is cut.
var dateLayouts = []string{
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 2006 15:04 -0700",
	"Mon, 2 Jan 2006 15:04 MST",
	"2 Jan 2006 15:04:05 -0700",
	"2 Jan 2006 15:04:05 MST",
	"2 Jan 2006 15:04 -0700",
	"Mon, 2 Jan 06 15:04:05 -0700",
	"Mon, 2 Jan 06 15:04:05 MST",
	"2 Jan 06 15:04:05 -0700",
	"2 Jan 06 15:04:05 MST",
	"Mon, 2-Jan-2006 15:04:05 -0700",
	"2-Jan-2006 15:04:05 -0700",
	"Mon Jan 2 15:04:05 2006",
	"Mon Jan 2 15:04:05 MST 2006",
	"Mon, 2 Jan 2006 15:04:05",
	"2 Jan 2006 15:04:05",
	time.RFC3339,
	"2006-01-02 15:04:05 -0700",
	"2006-01-02 15:04:05",
}

// ParseDate parses an article's Date leniently: RFC 5322 (and RFC 822's
// obsolete forms: two-digit years, named zones, no seconds, no weekday),
// with a trailing comment such as "(UTC)", asctime, and RFC 3339. A zone
// name Go does not know counts as UTC. A date outside the years 1970 to
// 9999, in UTC, does not parse.
func ParseDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if len(s) > maxDateField || s == "" {
		return time.Time{}, false
	}
	t, err := mail.ParseDate(s)
	if err != nil {
		if i := strings.IndexByte(s, '('); i > 0 {
			s = strings.TrimSpace(s[:i])
		}
		s = strings.Join(strings.Fields(s), " ")
		for _, layout := range dateLayouts {
			if t, err = time.Parse(layout, s); err == nil {
				break
			}
		}
	}
	if err != nil {
		return time.Time{}, false
	}
	// The years of the time in UTC, not in the Date's zone: 31 Dec 9999
	// 23:59 at -0100 is in the year 10000.
	if t = t.UTC(); t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, false
	}
	return t, true
}
