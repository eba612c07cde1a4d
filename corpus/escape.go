package corpus

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/edgeindex/edgeindex"
)

// maxEscaped is the longest escaped name used as is; longer ones are cut
// and suffixed with a hash, keeping every path element under 255 bytes.
const maxEscaped = 160

// EscapeGroup returns the directory name of group: lowercase ASCII letters,
// digits, '-', '_', '+' and '.' (but not a leading '.') are kept, and every
// other byte becomes %XX (uppercase hex). The escape is reversible
// (UnescapeGroup) unless the result would be longer than 160 bytes: then it
// is its first 96 bytes, '~' and the SHA-256 of the name in hex, which no
// short name can produce since '~' is always escaped. An empty group is an
// error wrapping edgeindex.ErrInvalid.
func EscapeGroup(group string) (string, error) {
	if group == "" {
		return "", edgeindex.Invalidf("group name is empty")
	}
	const hexdigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(group))
	for i := 0; i < len(group); i++ {
		c := group[i]
		if keep(c) && (c != '.' || i > 0) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdigits[c>>4])
		b.WriteByte(hexdigits[c&15])
	}
	s := b.String()
	if len(s) > maxEscaped {
		sum := sha256.Sum256([]byte(group))
		s = s[:96] + "~" + hex.EncodeToString(sum[:])
	}
	return s, nil
}

func keep(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '+' || c == '.'
}

// UnescapeGroup reverses EscapeGroup. It reports false for a name that
// EscapeGroup does not produce, and for a hashed long name.
func UnescapeGroup(name string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '%' {
			if !keep(c) || c == '.' && i == 0 {
				return "", false
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		v, err := hex.DecodeString(name[i+1 : i+3])
		if err != nil || strings.ToUpper(name[i+1:i+3]) != name[i+1:i+3] {
			return "", false
		}
		b.WriteByte(v[0])
		i += 2
	}
	group := b.String()
	if esc, err := EscapeGroup(group); err != nil || esc != name {
		return "", false
	}
	return group, true
}
