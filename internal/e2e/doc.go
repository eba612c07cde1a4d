// Package e2e holds the end-to-end tests: a real coordinator over real
// HTTP, on SQLite and on PostgreSQL, with real edge workers indexing
// synthetic articles, and the fault cases of a worker killed mid-range and
// of a worker paused past its TTL.
package e2e
