// Command coordinator runs the edgeindex coordinator and manages its state.
//
// "coordinator -h" lists the commands, one line each, and "coordinator
// COMMAND -h" prints one command's usage and flags: both are generated
// from the commands' flag sets (usage.go), so they never drift from what
// the commands take. With no command it serves. Flags may come before or
// after the positional arguments. docs/operating.md walks an operator
// through setting up and running it.
//
// Only serve, demo and init make a database; every other command opens the
// one its --db, or its --data directory, names and fails, making nothing,
// when there is none there.
package main
