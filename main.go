// Command countersvc serves named counters over HTTP. main reads the
// configuration, has internal/wire build the service (see its package doc
// for the order of the wrappers: MySQL store, Redis cache, coalescer,
// counters, tickets and hits, HTTP), serves it, and stops gracefully on
// SIGTERM. See README.md for the settings.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only on COUNTERS_DEBUG_ADDR
	"os"
	"os/signal"
	"syscall"

	"countersvc/internal/config"
	"countersvc/internal/wire"
)

func main() {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "countersvc: configuration:", err)
		os.Exit(2)
	}
	log := newLogger(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("countersvc stopped", "error", err.Error())
		os.Exit(1)
	}
}

func newLogger(cfg config.Config) *slog.Logger {
	level, _ := cfg.SlogLevel()
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stdout, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stdout, opts))
}

// run serves until ctx is cancelled (SIGTERM), then lets in-flight requests
// finish before closing Redis and MySQL.
func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	svc, err := wire.Build(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer svc.Close()

	// Bind before saying so. "tcp" rather than Fiber's default "tcp4": an
	// address without a host (":8080") then takes IPv6 as well as IPv4.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- svc.App.Listener(ln) }()
	log.Info("countersvc listening", "addr", ln.Addr().String())
	if cfg.DebugAddr != "" {
		go func() { log.Warn("debug server stopped", "error", http.ListenAndServe(cfg.DebugAddr, nil)) }()
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	if err := svc.App.ShutdownWithTimeout(cfg.ShutdownTimeout); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
