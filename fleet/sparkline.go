package fleet

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The size of a sparkline, in CSS pixels, and the room kept above and below
// the line so that its stroke is not cut.
const (
	sparkWidth  = 120.0
	sparkHeight = 24.0
	sparkPad    = 2.5
)

// sparkline is a series drawn as inline SVG, computed once when a read is
// kept: the template only places it. Its x axis is time (a gap between two
// kept reads is a longer segment), from its first value to the last read;
// its y axis runs from 0 to the series' highest value.
type sparkline struct {
	// Runs are polylines' points ("x,y x,y"): one per run of consecutive
	// values, two values at least.
	Runs []string
	// Dots are the values drawn alone: a value between two without one,
	// and the last value, which is marked.
	Dots []sparkDot
	// Points is how many values are drawn.
	Points int
	// Top is the value at the top of the scale.
	Top float64
}

type sparkDot struct {
	X, Y string
	Last bool
}

// newSparkline draws ys (nil: no value) at the times at.
func newSparkline(at []time.Time, ys []*float64) sparkline {
	// The x axis runs from the first value's time to the last read's: a
	// rate's first value is at the second read, and the line uses the whole
	// width from there.
	var sp sparkline
	first := -1
	for i, y := range ys {
		if y == nil {
			continue
		}
		sp.Top = max(sp.Top, *y)
		if first < 0 {
			first = i
		}
	}
	span := 0.0
	if first >= 0 {
		span = at[len(at)-1].Sub(at[first]).Seconds()
	}
	pts := make([]string, len(ys)) // "x,y", or "" for no value
	lastAt := -1
	for i, y := range ys {
		if y == nil {
			continue
		}
		x := sparkWidth
		if span > 0 {
			x = min(max(at[i].Sub(at[first]).Seconds()/span, 0), 1) * sparkWidth
		}
		yy := sparkHeight - sparkPad
		if sp.Top > 0 {
			yy -= *y / sp.Top * (sparkHeight - 2*sparkPad)
		}
		pts[i] = svgNum(x) + "," + svgNum(yy)
		sp.Points++
		lastAt = i
	}
	for i := 0; i < len(pts); {
		j := i
		for j < len(pts) && pts[j] != "" {
			j++
		}
		switch {
		case j-i > 1:
			sp.Runs = append(sp.Runs, strings.Join(pts[i:j], " "))
		case j-i == 1 && i != lastAt:
			sp.Dots = append(sp.Dots, dotAt(pts[i], false))
		}
		i = j + 1
	}
	if lastAt >= 0 {
		sp.Dots = append(sp.Dots, dotAt(pts[lastAt], true))
	}
	return sp
}

func dotAt(pt string, last bool) sparkDot {
	x, y, _ := strings.Cut(pt, ",")
	return sparkDot{X: x, Y: y, Last: last}
}

func svgNum(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// rateView is a rate formatted for the dashboard.
type rateView struct {
	Now   string // "12.5/s", or "–"
	None  bool   // Now is "–": the last step has no rate
	Avg   string // "avg 10.2/s", or ""
	Title string
	Spark sparkline
}

// newRateView formats r, whose series is aligned with at (n reads).
func newRateView(r *RateSeries, at []time.Time, n int) rateView {
	v := rateView{Now: "–", None: true, Spark: newSparkline(at, r.Series)}
	if r.ArticlesPerSecond != nil {
		v.Now, v.None = formatRate(*r.ArticlesPerSecond), false
	}
	if r.Average != nil {
		v.Avg = "avg " + formatRate(*r.Average)
	}
	switch {
	case n < 2:
		v.Title = "a rate appears once two reads are kept"
	case r.ArticlesPerSecond == nil:
		v.Title = "no rate over the last step: the lane is new, or its counter went back (a reset)"
	default:
		v.Title = "articles/s over the last step"
	}
	if n > 1 {
		v.Title += "; the line: " + strconv.Itoa(v.Spark.Points) + " steps of the last " + strconv.Itoa(n) +
			" kept reads, over " + humanDuration(at[n-1].Sub(at[0])) + ", 0 to " + formatRate(v.Spark.Top)
	}
	return v
}

// lagView is a tail lane's lag formatted for the dashboard.
type lagView struct {
	Has   bool
	Now   string // "1,234"
	Title string
	Spark sparkline
}

func newLagView(lr *LaneRate, at []time.Time) lagView {
	if lr.Lag == nil {
		return lagView{}
	}
	ys := make([]*float64, len(lr.LagSeries))
	for i, l := range lr.LagSeries {
		if l != nil {
			f := float64(*l)
			ys[i] = &f
		}
	}
	v := lagView{Has: true, Now: groupDigits(*lr.Lag), Spark: newSparkline(at, ys)}
	v.Title = "articles up to the provider's high watermark the tail has not stored; the line: the last " +
		strconv.Itoa(len(at)) + " kept reads, 0 to " + groupDigits(int64(v.Spark.Top))
	return v
}

// formatRate is a rate in articles per second, with the digits that matter.
func formatRate(v float64) string {
	switch {
	case v >= 100:
		return groupDigits(int64(math.Round(v))) + "/s"
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64) + "/s"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "/s"
}

// groupDigits writes n with thousands separated by commas: 1,234,567.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
