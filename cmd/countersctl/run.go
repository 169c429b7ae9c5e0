package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

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
	fs    *flag.FlagSet
	args  []string // the positional arguments after the command's words
}

// command is one command of the table.
type command struct {
	words   string // "inc", "keys create"
	args    string // the positional arguments, for the usage
	minArgs int
	maxArgs int // -1: any
	about   string
	flags   func(fs *flag.FlagSet)
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

func (g *globals) register(fs *flag.FlagSet, getenv func(string) string) {
	url := getenv("COUNTERS_URL")
	if url == "" {
		url = defaultURL
	}
	fs.StringVar(&g.url, "url", url, "the service's URL (COUNTERS_URL)")
	fs.StringVar(&g.token, "token", getenv("COUNTERS_TOKEN"), "the admin token or an API key's secret (COUNTERS_TOKEN)")
	fs.BoolVar(&g.json, "json", false, "print the service's JSON answer")
	fs.DurationVar(&g.timeout, "timeout", defaultWait, "give up after this long, retries included")
}

// run is the whole command: it returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd, rest, err := findCommand(args)
	if err != nil {
		fmt.Fprintf(stderr, "countersctl: %v\n\n", err)
		usage(stderr)
		return exitUsage
	}
	if cmd == nil {
		usage(stdout)
		return exitOK
	}
	var g globals
	fs := flag.NewFlagSet("countersctl "+cmd.words, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs, getenv)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	pos, err := parseFlags(fs, rest)
	if err == nil && (len(pos) < cmd.minArgs || (cmd.maxArgs >= 0 && len(pos) > cmd.maxArgs)) {
		err = usagef("%s takes %s", cmd.words, orNothing(cmd.args))
	}
	if err != nil {
		fmt.Fprintf(stderr, "countersctl: %v\nusage: countersctl %s\n", err, cmd.synopsis())
		return exitUsage
	}
	c, err := client.New(g.url, client.Options{Token: g.token})
	if err != nil {
		fmt.Fprintf(stderr, "countersctl: %v\n", err)
		return exitUsage
	}
	timed := !cmd.unbounded
	fs.Visit(func(f *flag.Flag) { timed = timed || f.Name == "timeout" })
	if timed {
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
	err = cmd.run(&env{ctx: ctx, c: c, stdin: stdin, out: stdout, json: g.json, fs: fs, args: pos})
	var ue usageError
	var ae *client.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "countersctl: %v\nusage: countersctl %s\n", err, cmd.synopsis())
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

// synopsis is the command's words, flags and arguments.
func (c *command) synopsis() string {
	parts := []string{c.words}
	if c.flags != nil {
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		c.flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				parts = append(parts, "[--"+f.Name+"]")
			} else {
				parts = append(parts, "[--"+f.Name+" "+strings.ToUpper(f.Name)+"]")
			}
		})
	}
	if c.args != "" {
		parts = append(parts, c.args)
	}
	return strings.Join(parts, " ")
}

func orNothing(s string) string {
	if s == "" {
		return "no arguments"
	}
	return s
}

// globalFlagTakesValue names the global flags that read the next argument.
var globalFlagTakesValue = map[string]bool{"url": true, "token": true, "timeout": true, "json": false}

// findCommand finds the command's words among the arguments, skipping
// global flags before them, and returns the other arguments in order.
// No command at all (or help) returns nil.
func findCommand(args []string) (*command, []string, error) {
	var rest, words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if isFlag(a) {
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			takes, global := globalFlagTakesValue[name]
			if len(words) == 0 && !global {
				if name == "h" || name == "help" {
					return nil, nil, nil
				}
				return nil, nil, usagef("flag %s before the command: only --url, --token, --json and --timeout may stand there", a)
			}
			rest = append(rest, a)
			if global && takes && !hasValue && i+1 < len(args) {
				rest = append(rest, args[i+1])
				i++
			}
			continue
		}
		if len(words) == 0 || (len(words) == 1 && groups[words[0]]) {
			words = append(words, a)
			continue
		}
		rest = append(rest, args[i:]...)
		break
	}
	if len(words) == 0 || words[0] == "help" {
		return nil, nil, nil
	}
	want := strings.Join(words, " ")
	for i := range commands {
		if commands[i].words == want {
			return &commands[i], rest, nil
		}
	}
	if groups[words[0]] && len(words) == 1 {
		return nil, nil, usagef("%s needs a subcommand", words[0])
	}
	return nil, nil, usagef("unknown command %q", want)
}

// parseFlags lets flags and positional arguments mix, as in "inc x 5
// --json": the flag package stops at the first positional one. A negative
// number is an argument, not a flag: "inc x -1".
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !isFlag(a) {
			pos = append(pos, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			return nil, usagef("unknown flag %s", a)
		}
		flags = append(flags, a)
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); hasValue || (ok && b.IsBoolFlag()) {
			continue
		}
		if i+1 >= len(args) {
			return nil, usagef("flag %s needs a value", a)
		}
		flags = append(flags, args[i+1])
		i++
	}
	if err := fs.Parse(flags); err != nil {
		return nil, usageError{err.Error()}
	}
	return pos, nil
}

func isFlag(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	_, err := strconv.ParseInt(a, 10, 64)
	return err != nil
}

func usage(w io.Writer) {
	fmt.Fprint(w, `countersctl calls a countersvc service.

usage: countersctl [--url URL] [--token TOKEN] [--json] [--timeout 10s] COMMAND [ARGS]

  --url      the service (COUNTERS_URL, default http://localhost:8080)
  --token    the admin token or an API key's secret (COUNTERS_TOKEN)
  --json     print the service's JSON answers instead of text
  --timeout  give up after this long, retries included (default 10s; watch: none)

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %s\n      %s\n", c.synopsis(), c.about)
	}
	fmt.Fprint(w, `
Exit status: 0 success, 1 the service answered an error (message and code on
stderr) or could not be reached, 2 a usage error.
`)
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

func (e *env) isSet(name string) bool {
	set := false
	e.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

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
