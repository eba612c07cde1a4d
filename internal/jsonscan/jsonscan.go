// Package jsonscan holds the byte-level steps that the hand-written JSON
// decoders (edgeframe's batch decoder, release's binary decoder) share.
package jsonscan

// Space returns the index of the first byte at or after i in p that is not
// JSON white space (len(p) when there is none).
func Space(p []byte, i int) int {
	for i < len(p) {
		switch p[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Peek skips white space from i and returns the next byte (0 at the end)
// and its index.
func Peek(p []byte, i int) (byte, int) {
	i = Space(p, i)
	if i < len(p) {
		return p[i], i
	}
	return 0, i
}
