package lease

// Span is an inclusive span [From, To] of article numbers: one chunk.
type Span struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Len is the number of article numbers in the span.
func (s Span) Len() int64 { return s.To - s.From + 1 }

// Spans returns the chunks of [start, end]: spans of chunkSize aligned to
// start, the last one ending at end. It returns nil when start > end or
// chunkSize < 1.
func Spans(start, end, chunkSize int64) []Span {
	if start > end || chunkSize < 1 {
		return nil
	}
	n := (end-start)/chunkSize + 1
	out := make([]Span, 0, n)
	for from := start; from <= end; {
		to := end
		if end-from >= chunkSize { // avoids overflow of from+chunkSize-1 near MaxInt64
			to = from + chunkSize - 1
		}
		out = append(out, Span{From: from, To: to})
		if to == end {
			break
		}
		from = to + 1
	}
	return out
}

// SpanAt returns the chunk of [start, end] that holds article n, and false
// when n is outside the range or chunkSize < 1.
func SpanAt(start, end, chunkSize, n int64) (Span, bool) {
	if n < start || n > end || chunkSize < 1 {
		return Span{}, false
	}
	from := start + (n-start)/chunkSize*chunkSize
	to := end
	if end-from >= chunkSize {
		to = from + chunkSize - 1
	}
	return Span{From: from, To: to}, true
}

// IsChunkStart reports whether n is the first article of one of the chunks
// of [start, end].
func IsChunkStart(start, end, chunkSize, n int64) bool {
	s, ok := SpanAt(start, end, chunkSize, n)
	return ok && s.From == n
}
