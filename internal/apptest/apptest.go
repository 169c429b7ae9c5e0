// Package apptest runs the whole service for tests: a real MySQL database
// (and Redis, when asked), the service built by internal/wire exactly as
// main.go builds it, and a real HTTP listener on 127.0.0.1.
package apptest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
	"github.com/countersvc/countersvc/storage"
)

// Env is one running service, built by internal/wire as main.go builds it.
type Env struct {
	*wire.Service
	DSN    string
	URL    string // http://127.0.0.1:port
	Client *http.Client
	log    *logBuffer
	close  func()
}

// Close stops the service, as the test's end would: its streams end, its
// connections close, its loops stop. A test that goes on with the same
// database without it (a restart) calls it; calling it again does nothing.
func (e *Env) Close() { e.close() }

// Logs is everything the service has logged so far (at COUNTERS_LOG_LEVEL),
// as text lines.
func (e *Env) Logs() string { return e.log.String() }

// logBuffer keeps the service's log for Logs; handlers write from many
// goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Option changes the service's configuration before it starts.
type Option func(*wire.Config)

// New starts the service on a fresh database of the shared test server,
// without Redis.
func New(tb testing.TB, opts ...Option) *Env {
	tb.Helper()
	return NewWithDSN(tb, MigratedDSN(tb), opts...)
}

// MigratedDSN is the DSN of a fresh database with the service's schema,
// copied from the one template this test binary migrates: the service's
// start then finds no migration to run.
func MigratedDSN(tb testing.TB) string {
	tb.Helper()
	return testenv.MigratedDSN(tb, storage.Migrate)
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
	return start(tb, MigratedDSN(tb), redisURL, opts)
}

// start builds the service with the defaults of an empty environment, the
// given servers and opts, and serves it on a fresh listener.
func start(tb testing.TB, dsn, redisURL string, opts []Option) *Env {
	tb.Helper()
	cfg := wire.Defaults()
	cfg.MySQL.DSN, cfg.Cache.RedisURL = dsn, redisURL
	for _, opt := range opts {
		opt(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	level, _ := cfg.Log.SlogLevel() // validated
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	var svc *wire.Service
	var err error
	// No lock: services start side by side (storage sets the driver's
	// global logger once, at init).
	svc, err = wire.Build(ctx, cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level})))
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go svc.App.Listener(ln)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			svc.Drain.Start() // ends live-update streams, which would hold up the shutdown
			svc.App.ShutdownWithTimeout(5 * time.Second)
			cancel()
			svc.Close()
		})
	}
	tb.Cleanup(stop)
	return &Env{
		Service: svc,
		DSN:     dsn,
		URL:     "http://" + ln.Addr().String(),
		Client: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256},
		},
		log:   logs,
		close: stop,
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

// Hit counts a page hit on name (GET /v1/hits/{name}) and returns the value
// it answered, failing the test on any other answer than 200 for name.
func (e *Env) Hit(tb testing.TB, name string, headers ...string) int64 {
	tb.Helper()
	res := e.Do(tb, "GET", "/v1/hits/"+url.PathEscape(name), "", headers...)
	if res.Status != 200 {
		tb.Fatalf("hit on %q: status %d, body %s", name, res.Status, res.Body)
	}
	var body struct {
		Name  string
		Value int64
	}
	res.Decode(tb, &body)
	if body.Name != name {
		tb.Fatalf("hit on %q answered name %q", name, body.Name)
	}
	return body.Value
}

// Stored reads the counter's value from MySQL, past every cache; -1 when
// it does not exist.
func (e *Env) Stored(tb testing.TB, name string) int64 {
	tb.Helper()
	var v int64 = -1
	err := e.DB.QueryRowContext(context.Background(), "SELECT value FROM counter WHERE name = ?", name).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		tb.Fatal(err)
	}
	return v
}

// WaitRecovered waits up to 20 s for a POST to path to succeed again, as
// it does once MySQL answers after an outage.
func (e *Env) WaitRecovered(tb testing.TB, path string) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := e.Do(tb, "POST", path, "")
		if r.Status == 200 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no recovery after MySQL answered again: %d %s", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
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

// The shared service: one a test binary, with the defaults (its pool sized
// for four tests at once, see sharedConns) and without
// Redis, for the tests that need only the HTTP surface and change no
// setting. They run in parallel (t.Parallel) and use names, boards and
// companies of their own; a test that needs other settings, a fresh
// database, a restart, or a service to itself (its assertions hold only
// while nothing else loads the service: many concurrent writers with no
// 503 allowed) starts its own with New. Main stops it when the
// tests have run.
var shared struct {
	once sync.Once
	env  *Env
	err  string
	tb   *processTB
}

// sharedConns is the shared service's pool of MySQL connections: the
// default's 32 for each of the four tests that go test -parallel 4 runs at
// once: with the default pool, one test's requests waited for connections
// that the others held until their deadline passed (503).
const sharedConns = 4 * 32

// Shared returns the shared service, starting it on first use.
func Shared(tb testing.TB) *Env {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs MariaDB, which -short leaves out")
	}
	shared.once.Do(func() {
		shared.tb = &processTB{}
		defer func() {
			if r := recover(); r != nil {
				shared.err = fmt.Sprint(r)
			}
		}()
		shared.env = New(shared.tb, func(c *wire.Config) { c.MySQL.MaxOpenConns = sharedConns })
	})
	if shared.err != "" {
		tb.Fatalf("starting the shared service: %s", shared.err)
	}
	return shared.env
}

// Main runs the tests of a package that uses Shared and then stops the
// shared service: call it from TestMain as os.Exit(apptest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared.tb != nil {
		shared.tb.cleanup()
	}
	return code
}

// processTB lets the shared service outlive the test that first asked
// for it: the helpers take a testing.TB, and a test's would stop the
// service when that test ends. Only what they call is implemented; the
// embedded nil TB panics on anything else, which a test run shows.
type processTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (*processTB) Helper()                           {}
func (*processTB) Name() string                      { return "shared" }
func (*processTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (*processTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *processTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *processTB) cleanup() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
