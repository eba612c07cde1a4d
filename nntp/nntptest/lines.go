package nntptest

import (
	"fmt"
	"strconv"
	"time"
)

var (
	names   = []string{"Quiet.River", "Northern.Lights", "Silver.Harbor", "Broken.Signal", "Lost.Empire", "Midnight.Garden"}
	tags    = []string{"1080p.WEB-DL.x264-SYN", "2160p.BluRay.x265-GRP", "720p.HDTV.x264-NTb", "FLAC-KOGi"}
	posters = []string{"Yenc PowerPost <powerpost@example.invalid>", "ngPost <ngpost@example.invalid>", "Binary Bob <bob@binaries.invalid>"}
)

// Line returns a realistic overview line for article n of group, without
// its line ending, about 250 bytes: a yEnc multi-part subject, a poster, a
// date, a Message-ID, bytes, lines and an Xref field. It is a pure function
// of (group, n).
func Line(group string, n int64) []byte {
	return AppendLine(nil, group, n)
}

// AppendLine appends Line(group, n) to dst.
func AppendLine(dst []byte, group string, n int64) []byte {
	u := uint64(n)
	rel := u / 50 // 50 parts per file
	part := u%50 + 1
	file := rel%27 + 1
	name := names[rel%uint64(len(names))]
	tag := tags[(rel/7)%uint64(len(tags))]
	year := 1990 + int(rel%35)
	date := time.Unix(1_500_000_000+int64(rel%5_000_000)*120, 0).UTC()
	size := 700_000 + int64(u*7919%50_000)
	dst = strconv.AppendInt(dst, n, 10)
	dst = fmt.Appendf(dst, "\t[%02d/27] - \"%s.%d.%s.part%02d.rar\" yEnc (%d/50)", file, name, year, tag, file, part)
	dst = append(dst, '\t')
	dst = append(dst, posters[rel%uint64(len(posters))]...)
	dst = append(dst, '\t')
	dst = date.AppendFormat(dst, time.RFC1123Z)
	dst = fmt.Appendf(dst, "\t<part%dof50.%016x@powerpost2000AA.local>\t\t", part, u*0x9e3779b97f4a7c15)
	dst = strconv.AppendInt(dst, size, 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, size/128+14, 10)
	dst = append(dst, "\tXref: news.example.test "...)
	dst = append(dst, group...)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, n, 10)
	return dst
}

// Lines returns Line(group, n) for every n in [from, to].
func Lines(group string, from, to int64) [][]byte {
	out := make([][]byte, 0, max(0, to-from+1))
	for n := from; n <= to; n++ {
		out = append(out, Line(group, n))
	}
	return out
}
