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

	"github.com/edgeindex/edgeindex/grouplease"
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
	// An error may quote a provider's or a peer's text: it goes out on one
	// line with nothing a terminal would act on.
	return "coordinator: " + grouplease.OneLine(strings.TrimPrefix(err.Error(), "coordinator: "))
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
