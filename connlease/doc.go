// Package connlease shares a provider's connection budget between the
// coordinators on one database. A provider's account allows so many
// connections in all; each connection a coordinator opens holds a slot,
// a fenced lease with a TTL stored in the database: renewed while the
// connection is open, given back when it closes, and taken over by
// another coordinator once a dead one's lease runs out. Together the
// coordinators never hold more slots than the budget.
//
// The slots are shared fairly by demand: a coordinator that holds more
// than its share, max(1, size / coordinators holding or wanting), while
// another that wants one holds less, gives the excess back as their
// connections are next put back (a reconnect each), and takes no more
// meanwhile. One at its share keeps its slots.
//
// Budget and Slot are what an nntp.Source takes its connections from
// (nntp.Config.Budget; nntp's Budget and Slot are these). SharedBudget
// implements Budget over a Store, which sqlstore implements on SQLite and
// PostgreSQL. The package imports nothing of nntp, so a store of slots
// needs nothing of the NNTP client.
package connlease
