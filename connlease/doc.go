// Package connlease shares a provider's connection budget between the
// coordinators on one database. A provider's account allows so many
// connections in all; each connection a coordinator opens holds a slot,
// a fenced lease with a TTL stored in the database: renewed while the
// connection is open, given back when it closes, and taken over by
// another coordinator once a dead one's lease runs out. Together the
// coordinators never hold more slots than the budget.
//
// Budget implements nntp.Budget over a Store; sqlstore implements Store
// on SQLite and PostgreSQL.
package connlease
