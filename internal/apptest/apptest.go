// Package apptest runs the whole service for tests: a real MySQL database
// (and Redis, when asked), the service built by internal/wire exactly as
// main.go builds it, and a real HTTP listener on 127.0.0.1.
package apptest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"countersvc/internal/config"
	"countersvc/internal/testenv"
	"countersvc/internal/wire"
	"countersvc/storage"
)

// Env is one running service, built by internal/wire as main.go builds it.
type Env struct {
	*wire.Service
	DSN    string
	URL    string // http://127.0.0.1:port
	Client *http.Client
}

// Option changes the service's configuration before it starts.
type Option func(*config.Config)

// New starts the service on a fresh database of the shared test server,
// without Redis.
func New(tb testing.TB, opts ...Option) *Env {
	tb.Helper()
	return NewWithDSN(tb, testenv.MySQLDSN(tb), opts...)
}

// NewWithDSN starts the service on the database of dsn, without Redis.
func NewWithDSN(tb testing.TB, dsn string, opts ...Option) *Env {
	tb.Helper()
	return start(tb, dsn, "", opts)
}

// NewWithCache starts the service on a fresh database with the Redis of
// redisURL: the read cache and the page-hit limits, as configured by default.
func NewWithCache(tb testing.TB, redisURL string, opts ...Option) *Env {
	tb.Helper()
	return start(tb, testenv.MySQLDSN(tb), redisURL, opts)
}

// OpenStore opens the database of dsn (migrating it) and its counter store,
// both closed when the test ends.
func OpenStore(tb testing.TB, dsn string) (*storage.CounterStore, *storage.DB) {
	tb.Helper()
	ctx := context.Background()
	db, err := storage.Open(ctx, dsn, storage.Options{MaxOpenConns: 32})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	store, err := storage.NewCounterStore(ctx, db)
	if err != nil {
		tb.Fatal(err)
	}
	return store, db
}

// start builds the service with the defaults of an empty environment, the
// given servers and opts, and serves it on a fresh listener.
func start(tb testing.TB, dsn, redisURL string, opts []Option) *Env {
	tb.Helper()
	cfg := config.Defaults()
	cfg.MySQLDSN, cfg.RedisURL = dsn, redisURL
	for _, opt := range opts {
		opt(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := wire.Build(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go svc.App.Listener(ln)
	tb.Cleanup(func() {
		svc.Drain.Start() // ends live-update streams, which would hold up the shutdown
		svc.App.ShutdownWithTimeout(5 * time.Second)
		cancel()
		svc.Close()
	})
	return &Env{
		Service: svc,
		DSN:     dsn,
		URL:     "http://" + ln.Addr().String(),
		Client: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256},
		},
	}
}

// Response is a finished request.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Decode unmarshals the body into v or fails the test.
func (r Response) Decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("decoding %q: %v", r.Body, err)
	}
}

// ErrorCode is the code of a JSON error body, or "".
func (r Response) ErrorCode() string {
	var e struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(r.Body, &e)
	return e.Error.Code
}

// Do sends a request; body "" sends none. headers are "Key: value" pairs.
func (e *Env) Do(tb testing.TB, method, path, body string, headers ...string) Response {
	tb.Helper()
	r, err := e.TryDo(method, path, body, headers...)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// TryDo is Do for goroutines: it returns the error instead of failing.
func (e *Env) TryDo(method, path, body string, headers ...string) (Response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		return Response{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	res, err := e.Client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return Response{Status: res.StatusCode, Header: res.Header, Body: b}, err
}
