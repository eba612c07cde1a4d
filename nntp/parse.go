package nntp

import (
	"fmt"
	"strconv"
	"strings"
)

// maxReplyLine bounds a status line or a CAPABILITIES line. RFC 3977 caps a
// reply line at 512 octets; servers in the wild send a little more, never
// this much.
const maxReplyLine = 4096

// parseStatus splits a status line "ddd text" into its code and text. The
// code must be three digits, 100..599, followed by the end of the line or a
// space.
func parseStatus(line string) (code int, text string, err error) {
	if len(line) > maxReplyLine {
		return 0, "", fmt.Errorf("%w: status line of %d bytes", ErrProtocol, len(line))
	}
	if len(line) < 3 || (len(line) > 3 && line[3] != ' ') {
		return 0, "", fmt.Errorf("%w: malformed status line %q", ErrProtocol, clip(line))
	}
	for i := 0; i < 3; i++ {
		if line[i] < '0' || line[i] > '9' {
			return 0, "", fmt.Errorf("%w: malformed status line %q", ErrProtocol, clip(line))
		}
	}
	code = int(line[0]-'0')*100 + int(line[1]-'0')*10 + int(line[2]-'0')
	if code < 100 || code > 599 {
		return 0, "", fmt.Errorf("%w: status code %d out of range", ErrProtocol, code)
	}
	if len(line) > 4 {
		text = line[4:]
	}
	return code, text, nil
}

// GroupInfo is a GROUP reply: "211 count low high group".
type GroupInfo struct {
	Name  string
	Count int64 // the server's estimate of the articles in the group
	Low   int64 // the low watermark
	High  int64 // the high watermark
}

// Empty reports whether the group holds no article, in any of the forms RFC
// 3977 section 6.1.1.2 allows: a count of 0, high below low (usually
// low = high+1), or low and high both 0.
func (g GroupInfo) Empty() bool {
	return g.Count == 0 || g.High < g.Low || (g.Low == 0 && g.High == 0)
}

// parseGroup parses the text of a 211 reply: "count low high group", with
// anything after the group name ignored. The numbers must be non-negative
// decimal int64s.
func parseGroup(text string) (GroupInfo, error) {
	f := strings.Fields(text)
	if len(f) < 4 {
		return GroupInfo{}, fmt.Errorf("%w: GROUP reply %q: want \"count low high group\"", ErrProtocol, clip(text))
	}
	var n [3]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || v < 0 || f[i][0] == '+' {
			return GroupInfo{}, fmt.Errorf("%w: GROUP reply %q: %q is not an article number", ErrProtocol, clip(text), clip(f[i]))
		}
		n[i] = v
	}
	return GroupInfo{Name: f[3], Count: n[0], Low: n[1], High: n[2]}, nil
}

// Capabilities is a parsed CAPABILITIES list: each capability label, upper
// case, with its arguments as sent.
type Capabilities map[string][]string

// Has reports whether the list holds label (case-insensitive).
func (c Capabilities) Has(label string) bool {
	_, ok := c[strings.ToUpper(label)]
	return ok
}

// HasArg reports whether the list holds label with arg among its arguments
// (both case-insensitive), e.g. HasArg("AUTHINFO", "USER").
func (c Capabilities) HasArg(label, arg string) bool {
	for _, a := range c[strings.ToUpper(label)] {
		if strings.EqualFold(a, arg) {
			return true
		}
	}
	return false
}

// parseCapabilities parses the lines of a 101 reply. A line is a label (a
// letter, then letters, digits, dots and dashes) and space-separated
// arguments; blank lines are skipped, other malformed lines are an error.
func parseCapabilities(lines []string) (Capabilities, error) {
	c := make(Capabilities, len(lines))
	for _, line := range lines {
		if len(line) > maxReplyLine {
			return nil, fmt.Errorf("%w: capability line of %d bytes", ErrProtocol, len(line))
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		label := f[0]
		if !validLabel(label) {
			return nil, fmt.Errorf("%w: capability %q", ErrProtocol, clip(label))
		}
		label = strings.ToUpper(label)
		c[label] = append(c[label], f[1:]...)
	}
	return c, nil
}

func validLabel(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b >= 'A' && b <= 'Z', b >= 'a' && b <= 'z':
		case i > 0 && (b >= '0' && b <= '9' || b == '-' || b == '.' || b == '_'):
		default:
			return false
		}
	}
	return true
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
