// Command countersctl calls a countersvc service from the shell, through
// the Go client (package client) and nothing else: what it can do, an
// application can do with the client.
//
//	countersctl [--url URL] [--token TOKEN] [--json] [--timeout 10s] COMMAND [ARGS]
//
// The service's address and token come from COUNTERS_URL and
// COUNTERS_TOKEN, or the flags, which win. Global flags may stand before or
// after the command. The exit status is 0 on success, 1 when the service
// answered an error (its message and code are on stderr) or could not be
// reached, and 2 for a usage error. Run it without arguments for the
// commands, with COMMAND --help for one; the command line is spf13/cobra's
// (help, suggestions, --version, shell completion).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // --tz's zones for --from and --to, on a machine without a zone database (the Docker image)
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
