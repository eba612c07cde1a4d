package nntp

import "github.com/edgeindex/edgeindex/connlease"

// Budget is connlease.Budget: what a Source takes a Slot from before each
// connection it dials (Config.Budget). connlease keeps the interface, so
// that the stores that keep slots in the database need nothing of this
// package.
type Budget = connlease.Budget

// Slot is connlease.Slot: the right to hold one connection open.
type Slot = connlease.Slot
