// Command countersvc serves named counters over HTTP. main reads the
// configuration, has internal/wire build the service (see its package doc
// for the order of the wrappers: MySQL store, Redis cache, coalescer,
// counters, tickets and hits, HTTP), serves it, and stops gracefully on
// SIGTERM. See README.md for the settings. `countersvc migrate ...` is
// the one other command: see internal/migratecmd.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only on COUNTERS_DEBUG_ADDR
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/countersvc/countersvc/internal/foundation/gcpace"
	"github.com/countersvc/countersvc/internal/foundation/listen"
	"github.com/countersvc/countersvc/internal/migratecmd"
	"github.com/countersvc/countersvc/internal/wire"
)

func main() {
	cfg, err := wire.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "countersvc: configuration:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 {
		code := migratecmd.Run(ctx, cfg.MySQL, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	log := newLogger(cfg.Log)
	gcpace.Pace(ctx)
	if err := run(ctx, cfg, log); err != nil {
		log.Error("countersvc stopped", "error", err.Error())
		os.Exit(1)
	}
}

func newLogger(cfg wire.Log) *slog.Logger {
	level, _ := cfg.SlogLevel()
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "text" {
		return slog.New(slog.NewTextHandler(os.Stdout, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stdout, opts))
}

// run serves until ctx is cancelled (SIGTERM), then stops without leaving
// a request that reached it unanswered:
//
//  1. drain for COUNTERS_SHUTDOWN_DRAIN: /readyz answers 503 so that load
//     balancers stop sending, every answer carries "Connection: close" so
//     that clients leave their keep-alive connections (a connection the
//     server closed while a client was writing to it would lose that
//     request), and new connections are still served;
//  2. refuse new connections, close the listener once its accept queue is
//     empty (internal/foundation/listen),
//     close the connections that stayed idle all through the drain, and let
//     in-flight requests finish within COUNTERS_SHUTDOWN_TIMEOUT;
//  3. close Redis and MySQL.
func run(ctx context.Context, cfg wire.Config, log *slog.Logger) error {
	svc, err := wire.Build(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer svc.Close()

	// Bind before saying so.
	ln, err := listen.Listen(cfg.HTTP.Addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- svc.App.Listener(ln) }()
	log.Info("countersvc listening", "addr", ln.Addr().String())
	if cfg.HTTP.DebugAddr != "" {
		go func() { log.Warn("debug server stopped", "error", http.ListenAndServe(cfg.HTTP.DebugAddr, nil)) }()
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	svc.Drain.Start()
	log.Info("draining", "for", cfg.HTTP.ShutdownDrain.String())
	select {
	case err := <-errc:
		return err
	case <-time.After(cfg.HTTP.ShutdownDrain):
	}
	log.Info("shutting down", "timeout", cfg.HTTP.ShutdownTimeout.String())
	if err := svc.App.ShutdownWithTimeout(cfg.HTTP.ShutdownTimeout); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
