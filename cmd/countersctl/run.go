package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/countersvc/countersvc/client"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailed  = 1 // the service answered an error, or could not be reached
	exitUsage   = 2
	defaultURL  = "http://localhost:8080"
	defaultWait = 10 * time.Second
)

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// env is what a command runs with.
type env struct {
	ctx   context.Context
	c     *client.Client
	stdin io.Reader
	out   io.Writer
	json  bool
	fs    *pflag.FlagSet
	args  []string // the positional arguments after the command's words
}

// command is one command of the table.
type command struct {
	words   string // "inc", "keys create"
	args    string // the positional arguments, for the usage
	minArgs int
	maxArgs int // -1: any
	about   string
	flags   func(fs *pflag.FlagSet)
	run     func(e *env) error
	// unbounded commands run until interrupted unless --timeout is given.
	unbounded bool
}

// globals are the flags every command takes.
type globals struct {
	url, token string
	json       bool
	timeout    time.Duration
}

func (g *globals) register(fs *pflag.FlagSet, getenv func(string) string) {
	url := getenv("COUNTERS_URL")
	if url == "" {
		url = defaultURL
	}
	fs.StringVar(&g.url, "url", url, "the service's URL (COUNTERS_URL)")
	fs.StringVar(&g.token, "token", getenv("COUNTERS_TOKEN"), "the admin token or an API key's secret (COUNTERS_TOKEN)")
	fs.BoolVar(&g.json, "json", false, "print the service's JSON answers instead of text")
	fs.DurationVar(&g.timeout, "timeout", defaultWait, "give up after this long, retries included (watch: none unless given)")
}

// ranError is the error of a command that ran: the service's answer, or no
// answer. Any other error of the command line is a usage error.
type ranError struct{ error }

func (e ranError) Unwrap() error { return e.error }

// run is the whole command: it returns the exit status. The command line
// is cobra's (spf13/cobra: per-command --help, suggestions for a mistyped
// command, --version, and shell completion by "countersctl completion"),
// built from the table of commands; what each command prints is the
// command's own.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	var g globals
	root := newRoot(&g, getenv, stdin, stdout)
	root.SetArgs(negativesAsArguments(root, args))
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	var ran ranError
	if !errors.As(err, &ran) {
		if err != nil {
			fmt.Fprintf(stderr, "countersctl: %v\n", strings.TrimRight(err.Error(), "\n"))
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
			return exitUsage
		}
		return exitOK
	}
	var ue usageError
	var ae *client.Error
	switch err = ran.error; {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "countersctl: %v\nusage: %s\n", err, cmd.UseLine())
		return exitUsage
	case errors.As(err, &ae):
		if g.json && len(ae.Body) > 0 {
			fmt.Fprintf(stdout, "%s\n", bytes.TrimRight(ae.Body, "\n"))
		}
		fmt.Fprintf(stderr, "countersctl: %s (%s)\n", ae.Message, ae.Code)
		return exitFailed
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(stderr, "countersctl: no answer within --timeout %s: %v\n", g.timeout, err)
		return exitFailed
	default:
		fmt.Fprintf(stderr, "countersctl: %v\n", err)
		return exitFailed
	}
}

// newRoot builds the command line: the global flags, a command per row of
// the table, under its group's for two-word commands.
func newRoot(g *globals, getenv func(string) string, stdin io.Reader, stdout io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "countersctl",
		Short: "countersctl calls a countersvc service",
		Long: `countersctl calls a countersvc service: the Go client's calls from the shell.

The service is COUNTERS_URL (default http://localhost:8080), the token
COUNTERS_TOKEN; --url and --token win. Global flags may stand before or
after the command.

Exit status: 0 success, 1 the service answered an error (message and code on
stderr) or could not be reached, 2 a usage error.`,
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("countersctl {{.Version}}\n")
	g.register(root.PersistentFlags(), getenv)
	groups := map[string]*cobra.Command{}
	for i := range commands {
		c := &commands[i]
		parent := root
		words := strings.Fields(c.words)
		if len(words) == 2 {
			if groups[words[0]] == nil {
				groups[words[0]] = &cobra.Command{Use: words[0], Short: groupAbout[words[0]], RunE: needsSubcommand, SuggestionsMinimumDistance: 2}
				root.AddCommand(groups[words[0]])
			}
			parent = groups[words[0]]
		}
		leaf := &cobra.Command{
			Use:   strings.TrimSpace(words[len(words)-1] + " " + c.args),
			Short: c.about,
			Args: func(_ *cobra.Command, args []string) error {
				if len(args) < c.minArgs || (c.maxArgs >= 0 && len(args) > c.maxArgs) {
					return fmt.Errorf("%s takes %s", c.words, orNothing(c.args))
				}
				return nil
			},
			RunE: func(cmd *cobra.Command, args []string) error {
				return c.execute(cmd, g, args, stdin, stdout)
			},
		}
		if c.flags != nil {
			c.flags(leaf.Flags())
		}
		parent.AddCommand(leaf)
	}
	return root
}

// groupAbout says what each group of two-word commands is about.
var groupAbout = map[string]string{"keys": "API keys", "boards": "boards of tickets", "tickets": "numbered tickets", "webhooks": "calls when a counter crosses a threshold"}

// needsSubcommand answers a group without one of its commands, or with an
// unknown one: cobra hands those to the group as arguments.
func needsSubcommand(cmd *cobra.Command, args []string) error {
	var names []string
	for _, sub := range cmd.Commands() {
		names = append(names, sub.Name())
	}
	if len(args) == 0 {
		return fmt.Errorf("%s needs a subcommand: %s", cmd.Name(), strings.Join(names, ", "))
	}
	msg := fmt.Sprintf("unknown command %q", cmd.Name()+" "+args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("\n\nDid you mean this?\n\t%s %s", cmd.Name(), strings.Join(s, "\n\t"+cmd.Name()+" "))
	}
	return errors.New(msg)
}

// execute runs the command c with its arguments; every error it returns is
// a ranError.
func (c *command) execute(cmd *cobra.Command, g *globals, args []string, stdin io.Reader, stdout io.Writer) error {
	ctx := cmd.Context()
	cl, err := client.New(g.url, client.Options{Token: g.token})
	if err != nil {
		return ranError{usageError{err.Error()}}
	}
	if !c.unbounded || cmd.Flags().Changed("timeout") {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	if g.json {
		ctx = client.WithAnswerFunc(ctx, func(b []byte) {
			stdout.Write(b)
			if len(b) > 0 && b[len(b)-1] != '\n' {
				io.WriteString(stdout, "\n")
			}
		})
	}
	if err := c.run(&env{ctx: ctx, c: cl, stdin: stdin, out: stdout, json: g.json, fs: cmd.Flags(), args: args}); err != nil {
		return ranError{err}
	}
	return nil
}

func orNothing(s string) string {
	if s == "" {
		return "no arguments"
	}
	return s
}

// negativesAsArguments lets a negative number be an argument ("inc x -2",
// "set --min none x -5"), as it always was here: pflag, like flag parsers
// of its kind, reads "-2" as a flag. When one stands among the arguments,
// cobra is given the command's words, then the flags and their values,
// then "--" and the arguments in their order. A negative number that is a
// flag's value ("--min -5") stays one.
func negativesAsArguments(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == root {
		return args
	}
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.AddFlagSet(cmd.LocalFlags())
	fs.AddFlagSet(cmd.InheritedFlags())
	depth := len(strings.Fields(cmd.CommandPath())) - 1 // the command's words among the arguments
	var words, flags, positional []string
	negative := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case isNumber(a) || !strings.HasPrefix(a, "-") || a == "-":
			if len(words) < depth {
				words = append(words, a)
				continue
			}
			negative = negative || strings.HasPrefix(a, "-")
			positional = append(positional, a)
		default:
			flags = append(flags, a)
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			f := fs.Lookup(name)
			if !strings.HasPrefix(a, "--") && len(name) == 1 {
				f = fs.ShorthandLookup(name)
			}
			if f != nil && f.NoOptDefVal == "" && !hasValue && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		}
	}
	if !negative {
		return args
	}
	return append(append(append(words, flags...), "--"), positional...)
}

func isNumber(a string) bool {
	_, err := strconv.ParseInt(a, 10, 64)
	return err == nil
}

// stamp is the version a build names itself with -ldflags "-X
// main.stamp=...": scripts/run gives git describe's. The go command stamps
// no commit into a build of a workspace (go.work).
var stamp string

// version is stamp, else the module's version as the go command stamped it
// (the tag, for go install ...@vX.Y.Z) and the commit of a build from a
// checkout.
func version() string {
	if stamp != "" {
		return stamp
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			v += " " + s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			v += " (modified)"
		}
	}
	return v
}

// Argument helpers.

func (e *env) int64Arg(i int, what string) (int64, error) {
	n, err := strconv.ParseInt(e.args[i], 10, 64)
	if err != nil {
		return 0, usagef("%s must be an integer, not %q", what, e.args[i])
	}
	return n, nil
}

func (e *env) str(name string) string { return e.fs.Lookup(name).Value.String() }

func (e *env) isSet(name string) bool { return e.fs.Changed(name) }

// print writes a line of text unless the JSON answer was printed instead.
func (e *env) print(format string, a ...any) {
	if !e.json {
		fmt.Fprintf(e.out, format+"\n", a...)
	}
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func int64List(s, what string) ([]int64, error) {
	var out []int64
	for _, p := range splitList(s) {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, usagef("%s must be integers separated by commas, not %q", what, s)
		}
		out = append(out, n)
	}
	return out, nil
}
