package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/edgeindex/edgeindex/internal/redact"
)

var initCommand = command{
	name:    "init",
	summary: "make the data directory and the database (serve and demo make them too; no other command does)",
	about: `An existing database is kept: init applies the migrations it lacks and says where it is. On PostgreSQL the
database itself must exist (createdb); init makes its tables.`,
	setup: (*Main).initFlags,
}

func (m *Main) initFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	return m.initDB
}

// initDB makes the data directory and the database, or opens the ones
// there.
func (m *Main) initDB(ctx context.Context, pos []string) error {
	if err := noArgs("init", pos); err != nil {
		return err
	}
	if _, err := m.create(ctx); err != nil {
		return err
	}
	if !strings.HasPrefix(m.DB, "sqlite://") {
		fmt.Fprintf(m.Stdout, "database ready: %s\n", redact.URL(m.DB))
		return nil
	}
	fmt.Fprintf(m.Stdout, "database ready: %s (data directory %s)\n", redact.URL(m.DB), m.Data)
	return nil
}
