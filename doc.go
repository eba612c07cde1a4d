// Package edgeindex is the root of the edgeindex module and holds its one
// error vocabulary: ErrInvalid, ErrNotFound, ErrConflict, ErrLeaseLost and
// ErrFinished, with Invalidf and FinishedLost to make them. It imports
// nothing of edgeindex, so every package can use it; package api maps each
// error to its HTTP status and code (docs/api.md).
//
// The domain itself lives in leaf packages named for what they hold: lease
// (ranges, leases, fences), grouplease (ordered groups and lanes), batch
// (result batches), usenet (subjects, parts, binaries). docs/design.md maps
// the packages and the way the data takes through them.
package edgeindex
