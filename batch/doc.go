// Package batch holds result batches and the exactly-once rule.
//
// A worker posts the results of the articles [From, To] of a range it holds.
// Classify decides what a store does with it, given the range's resume point
// next and its end:
//
//   - from == next: store it; next becomes to+1 in the same transaction;
//   - to < next: a retry of a stored batch, answered as a duplicate;
//   - from > next: a gap (ErrGap); from < next <= to: an overlap (ErrOverlap);
//     both wrap edgeindex.ErrConflict;
//   - from > to, to past the end, headers negative or more than the span's
//     to-from+1 articles (HeadersFit), an item without a key: malformed
//     (ErrMalformed, wrapping edgeindex.ErrInvalid). Bounding headers by the
//     span bounds every sum of them: a range's by its size, a lane's by
//     its articles.
//
// Store stores batches under the range lease's fence and serves the results
// feed, which pages by cursor and shows each stored item exactly once, in
// storage order.
package batch
