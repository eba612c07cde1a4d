// Package usenet holds the domain of Usenet binary posts, and imports
// nothing of edgeindex: a binary subject parsed (ParseSubject), the parts
// of a file (Part), a binary as its items carry it (Binary) with its key
// (Key), and the union of two items of one binary (Merge). The collator
// (package collate) makes them from overview lines; the release builder,
// the stores, NZB and Newznab read them, without the worker SDK.
package usenet
