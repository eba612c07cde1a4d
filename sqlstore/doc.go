// Package sqlstore implements edgeindex's stores (lease.Store, batch.Store,
// grouplease.Catalog, grouplease.Store, grouplease.SnapshotStore and
// node.Store) on SQLite and PostgreSQL, with one schema and embedded,
// versioned migrations applied on Open.
//
// SQLite (sqlite://PATH) is the default and embedded, in pure Go: WAL, a busy
// timeout, one writer connection with immediate transactions, and a pool of
// read-only readers. PostgreSQL (postgres://...) uses sqlx and lib/pq; claims
// use FOR NO KEY UPDATE SKIP LOCKED, items go in with COPY, and migrations run under
// an advisory lock so processes that start together do not race.
//
// One clock decides expiry: Config.Clock when set (tests inject a
// clock.Manual), otherwise the database's clock on PostgreSQL, so every
// process sharing it agrees, and clock.Real on SQLite, whose file only
// processes on one machine can share.
//
// The results feed on PostgreSQL orders items by the transaction that stored
// them and shows an item only once every transaction that started before it
// has ended, so a reader paging by cursor never skips an item that commits
// late. The price: a transaction held open anywhere in the database holds the
// feed back until it ends.
package sqlstore
