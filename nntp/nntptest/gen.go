package nntptest

import (
	"fmt"
	"strconv"
	"time"
)

// Gen makes a group's articles as they are asked for, never holding
// them: a group of 10^9 articles, or one numbered above 2^40, costs
// nothing until an OVER reads a window of it. Set it as Group.Gen;
// Group.Lines is then ignored.
type Gen struct {
	// Low and High are the watermarks GROUP reports (the count is
	// High − Low + 1). Low may lie below the first present article, as
	// a server's does when the first articles expired.
	Low, High int64
	// Present reports whether article n (Low <= n <= High) exists; nil
	// means every one does. Absent numbers are holes: cancelled or
	// expired articles.
	Present func(n int64) bool
	// Date is article n's Date; nil gives GenDate.
	Date func(n int64) time.Time
	// Line, when set, is article n's whole overview line instead of the
	// one made of Date: garbage, a Date that does not parse, a line of any
	// size.
	Line func(n int64) []byte
}

// GenDate is the Date of article n of a generated group without its own:
// one article a second from 2020-01-01 UTC.
func GenDate(n int64) time.Time {
	return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Second)
}

// GenLine is an overview line for article n dated date, about 200 bytes.
func GenLine(group string, n int64, date time.Time) []byte {
	b := strconv.AppendInt(nil, n, 10)
	b = fmt.Appendf(b, "\t[1/1] - \"gen.%d.bin\" yEnc (1/1)\tGen Poster <gen@example.invalid>\t", n)
	b = date.AppendFormat(b, time.RFC1123Z)
	b = fmt.Appendf(b, "\t<gen.%d@example.invalid>\t\t%d\t%d\tXref: news.example.test %s:%d", n, 700_000+n%1000, 5_500, group, n)
	return b
}

func (g *Gen) present(n int64) bool {
	return n >= max(g.Low, 1) && n <= g.High && (g.Present == nil || g.Present(n))
}

func (g *Gen) line(group string, n int64) []byte {
	if g.Line != nil {
		return g.Line(n)
	}
	date := GenDate
	if g.Date != nil {
		date = g.Date
	}
	return GenLine(group, n, date(n))
}

// groupReply is the GROUP reply of a generated group.
func (g *Gen) groupReply(name string) string {
	if g.High < g.Low {
		return fmt.Sprintf("0 %d %d %s", g.Low, g.High, name)
	}
	return fmt.Sprintf("%d %d %d %s", g.High-g.Low+1, g.Low, g.High, name)
}

// overGen answers OVER or XOVER from-to on a generated group, honouring
// Endless and EndlessLong; false ends the session.
func (ss *session) overGen(cfg Config, g *group, from, to int64) bool {
	gen := g.gen
	first, last := max(from, gen.Low, 1), min(to, gen.High)
	n := first
	for ; n <= last && !gen.present(n); n++ {
		if (n-first)%4096 == 4095 && ss.closing() {
			return false
		}
	}
	if n > last && !cfg.Endless && cfg.EndlessLong == 0 {
		ss.reply(423, "no articles in that range")
		return true
	}
	ss.reply(224, "overview information follows")
	ow := ss.newOverWriter(cfg)
	for ; n <= last; n++ {
		if (n-first)%4096 == 4095 && ss.closing() {
			return false
		}
		if gen.present(n) && !ow.send(gen.line(g.name, n)) {
			return false
		}
	}
	for k := to + 1; cfg.Endless || cfg.EndlessLong > 0; k++ {
		if ss.closing() {
			return false
		}
		ok := cfg.EndlessLong > 0 && ow.sendLong(k, cfg.EndlessLong) || cfg.EndlessLong == 0 && ow.send(Line("endless", k))
		if !ok {
			return false
		}
	}
	return ow.end()
}

// closing reports whether the server is closing.
func (ss *session) closing() bool {
	select {
	case <-ss.s.done:
		return true
	default:
		return false
	}
}
