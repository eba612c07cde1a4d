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

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// runMain runs the command args name and returns the exit code, after
// writing its error, if any, to stderr as one line.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	m := NewMain(stdout, stderr)
	err := m.Run(ctx, args)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, errorLine(err))
	return exitCode(err)
}

// errorLine is err as the one line the program prints: prefixed with
// "coordinator: " once, even when a package's error starts with it.
func errorLine(err error) string {
	return "coordinator: " + strings.TrimPrefix(err.Error(), "coordinator: ")
}

// errUsage marks a command line that is wrong: exit code 2.
var errUsage = errors.New("usage")

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

func exitCode(err error) int {
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}
