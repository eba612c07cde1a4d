// Package sqlstore implements edgeindex's stores (lease.Store, batch.Store,
// grouplease.Catalog, grouplease.Store, grouplease.SnapshotStore and
// node.Store) on SQLite and PostgreSQL, with one schema and embedded,
// versioned migrations applied on Open.
//
// SQLite (sqlite://PATH) is the default and embedded, in pure Go: WAL, a busy
// timeout, one writer connection with immediate transactions, and a pool of
// read-only readers. PostgreSQL (postgres://...) uses sqlx and pgx (its
// database/sql driver, a query sent with its arguments in one round trip
// and planned for them); claims use FOR NO KEY UPDATE SKIP LOCKED, many items go
// in with pgx's binary COPY, and migrations run under an
// advisory lock so processes that start together do not race.
//
// Concurrent writes of the hot path (Put, Grant, ClaimChunk, ChunkFetched,
// and on PostgreSQL Finish and Heartbeat) are written in rounds, one loop
// per kind taking every call waiting when it is free, each call answered
// as it would have been alone. On
// PostgreSQL a round of small batches is written with one statement whose
// range updates hold only where each range is still as it was read (the
// fence in the WHERE), and which also grants the next ranges a
// PutThenGrant asks for; a range that changed is decided again under its
// lock.
//
// One clock decides expiry: Config.Clock when set (tests inject a
// clock.Manual), otherwise the database's clock on PostgreSQL, so every
// process sharing it agrees, and clock.Real on SQLite, whose file only
// processes on one machine can share.
//
// The results feed on PostgreSQL orders items by the transaction that stored
// them and shows an item only once every transaction that started before it
// has ended, so a reader paging by cursor never skips an item that commits
// late. The price: a transaction left open anywhere in the database delays the
// feed until it ends.
//
// Releases (release.Store) are searched by the words of their names
// (release.Searcher): a GIN index over the tsvector of the words as they
// are (no parser of PostgreSQL's splits or drops them) on PostgreSQL, an
// FTS5 table on SQLite, both written in the transaction that writes the
// release; a name gives at most 256 words to the index. A search by
// category or season without words reads an index of those columns; one
// that no index serves is bounded by SearchTimeout on both backends.
// The front door (searches, a release's details, the Newznab users'
// counts) has its own pool of Config.FrontConns connections, so a
// downloader's slow searches wait for each other, never for the
// connections that grant leases and store batches; a node's token, once
// read, is checked in memory and re-read every second, so a worker's
// request needs no connection to be authenticated. The users of the Newznab API and their daily
// counts (newznab.Store, newznab.Users) are counted by upserts that add a
// request or a grab only below the user's limit, so processes that share
// the database let exactly the limit through.
package sqlstore
