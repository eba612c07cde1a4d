// Package apidoctest reads docs/api.md, the wire contract, for the tests
// that hold a server's routes to it: the coordinator's, the fleet reader's
// and the front door's.
package apidoctest
