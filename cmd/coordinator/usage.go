package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
)

// A command is one form of the command line: the words that name it, its
// positional arguments, and the flag set it parses. The usage is made from
// these alone, so it says what the commands take.
type command struct {
	name    string // the words that name it: "serve", "group add"
	args    string // its positional arguments, for the usage: "NAME"
	summary string // one line, for the list of commands
	about   string // more, for the command's own usage (may be empty)
	// setup adds the command's flags to fs and returns what runs it on the
	// positional arguments once fs has parsed them.
	setup func(m *Main, fs *flag.FlagSet) func(ctx context.Context, pos []string) error
}

// commands lists every command, in the order the usage shows them.
func commands() []command {
	return []command{
		serveCommand, initCommand, demoCommand, statusCommand,
		nodeAddCommand, nodeRmCommand, nodeListCommand,
		groupAddCommand, groupPlanCommand, groupRmCommand,
		rangeAddCommand, rangeRetryCommand, snapshotResetCommand,
		releasesListCommand, releasesBuildCommand, nzbCommand,
		userAddCommand, userRmCommand, userSuspendCommand, userResumeCommand, userListCommand,
	}
}

// findCommand finds the command args name, and returns it with the
// arguments after its words. No words is serve; "releases" alone is
// releases list. A first word that names several commands with no second
// word that picks one fails with flag.ErrHelp when -h follows it.
func findCommand(args []string) (command, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return serveCommand, args, nil
	}
	all := commands()
	if len(args) > 1 {
		for _, c := range all {
			if c.name == args[0]+" "+args[1] {
				return c, args[2:], nil
			}
		}
	}
	for _, c := range all {
		if c.name == args[0] {
			return c, args[1:], nil
		}
	}
	if args[0] == "releases" {
		return releasesListCommand, args[1:], nil
	}
	subs := subcommands(args[0])
	if len(subs) == 0 {
		return command{}, nil, usagef("unknown command %q; try coordinator help", args[0])
	}
	if len(args) > 1 && isHelpFlag(args[1]) {
		return command{}, nil, flag.ErrHelp
	}
	return command{}, nil, usagef("%s takes a subcommand: %s; see coordinator %s -h", args[0], joinWords(subs), args[0])
}

// subcommands returns the second words of the commands named first by
// word.
func subcommands(word string) []string {
	var out []string
	for _, c := range commands() {
		if sub, ok := strings.CutPrefix(c.name, word+" "); ok {
			out = append(out, sub)
		}
	}
	return out
}

// help prints the usage the words after "help" ask for: every command's,
// those a first word names, or one command's.
func (m *Main) help(words []string) error {
	if len(words) == 0 {
		return m.printCommands("")
	}
	c, _, err := findCommand(words)
	if err != nil {
		if len(subcommands(words[0])) > 0 {
			return m.printCommands(words[0])
		}
		return err
	}
	return m.printCommand(c)
}

// printCommands prints the commands, one line each (only those that word
// names first, when it is not empty), then the environment and an example.
func (m *Main) printCommands(word string) error {
	fmt.Fprintln(m.Stdout, "Usage: coordinator COMMAND [ARGUMENTS] [FLAGS]; with no command it serves.")
	fmt.Fprintln(m.Stdout, "\nCommands:")
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	for _, c := range commands() {
		if word == "" || strings.HasPrefix(c.name, word+" ") {
			fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
		}
	}
	tw.Flush()
	fmt.Fprintln(m.Stdout, "\n`coordinator COMMAND -h` prints a command's flags. Flags may come before or after the arguments.")
	fmt.Fprint(m.Stdout, environment)
	return nil
}

// printCommand prints one command's usage: its line, what it does, its
// flags from its flag set, then the environment and an example.
func (m *Main) printCommand(c command) error {
	fmt.Fprintf(m.Stdout, "Usage: coordinator %s [FLAGS]\n\n%s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
	if c.about != "" {
		fmt.Fprintf(m.Stdout, "\n%s\n", strings.TrimSpace(c.about))
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.setup(m, fs)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(m.Stdout, "\nFlags:")
		fs.SetOutput(m.Stdout)
		fs.PrintDefaults()
	}
	fmt.Fprint(m.Stdout, environment)
	return nil
}

// environment is the end of every usage: the variables the commands read,
// and an example.
const environment = `
Environment:
  EDGEINDEX_DB           the database when --db is not given (default sqlite://<data>/edgeindex.db)
  EDGEINDEX_DATA         the data directory when --data is not given (default ./edgeindex-data)
  EDGEINDEX_ADMIN_TOKEN  the admin token; without it, the one in <data>/admin.token, made on the first start
  EDGEINDEX_NNTP_USER    the NNTP user when --source's URL has none
  EDGEINDEX_NNTP_PASS    the NNTP password when --source's URL has none
  EDGEINDEX_STORAGE      --storage when it is not given
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL
                         --storage's credentials, region and endpoint when its URL has none

Example:
  coordinator init --data /var/lib/edgeindex
  EDGEINDEX_NNTP_USER=me EDGEINDEX_NNTP_PASS=secret coordinator serve --source nntps://news.example:563 --data /var/lib/edgeindex
`
