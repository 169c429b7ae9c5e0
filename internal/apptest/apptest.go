// Package apptest runs the whole service for tests: a real MySQL database,
// the real stores and a real HTTP listener on 127.0.0.1.
package apptest

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"countersvc/app"
	"countersvc/cache"
	"countersvc/counters"
	"countersvc/internal/testenv"
	"countersvc/storage"
	"countersvc/tickets"
)

// Env is one running service.
type Env struct {
	DSN      string
	DB       *sql.DB
	Store    *storage.CounterStore
	Counters counters.Service
	App      *fiber.App
	URL      string // http://127.0.0.1:port
	Client   *http.Client
	Cache    *cache.Store // nil unless started by NewWithCache

	TicketStore *storage.TicketStore
	Tickets     tickets.Service
}

// Option changes the service's options before it starts.
type Option func(*app.Options)

// New starts the service on a fresh database of the shared test server.
func New(tb testing.TB, opts ...Option) *Env {
	tb.Helper()
	return NewWithDSN(tb, testenv.MySQLDSN(tb), opts...)
}

// NewWithDSN starts the service on the database of dsn.
func NewWithDSN(tb testing.TB, dsn string, opts ...Option) *Env {
	tb.Helper()
	return build(tb, dsn, nil, opts)
}

// NewWithCache starts the service on a fresh database with the Redis cache
// between the service and the store. Unless co says otherwise the cache
// registers its metrics with the service's registry and uses the default
// Redis timeout.
func NewWithCache(tb testing.TB, redisURL string, co cache.Options, opts ...Option) *Env {
	tb.Helper()
	if co.Timeout == 0 {
		co.Timeout = cache.DefaultTimeout
	}
	rdb, err := cache.NewClient(redisURL, co.Timeout)
	if err != nil {
		tb.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if co.Registerer == nil {
		co.Registerer = reg
	}
	return build(tb, testenv.MySQLDSN(tb), func(e *Env, o *app.Options) counters.Store {
		e.Cache = cache.New(e.Store, rdb, co)
		tb.Cleanup(func() { e.Cache.Close(); rdb.Close() })
		o.Registry, o.RedisCheck = reg, e.Cache.Check
		return e.Cache
	}, opts)
}

// OpenStore opens the database of dsn (migrating it) and its counter store,
// both closed when the test ends.
func OpenStore(tb testing.TB, dsn string) (*storage.CounterStore, *sql.DB) {
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

// build starts the service on dsn; wrap, when set, puts a store in front of
// the MySQL one.
func build(tb testing.TB, dsn string, wrap func(*Env, *app.Options) counters.Store, opts []Option) *Env {
	tb.Helper()
	store, db := OpenStore(tb, dsn)
	e := &Env{DSN: dsn, DB: db, Store: store}
	o := app.Options{
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		MySQLCheck: db.PingContext,
	}
	var served counters.Store = store
	if wrap != nil {
		served = wrap(e, &o)
	}
	e.Counters = counters.NewService(served)
	o.Counters = e.Counters
	var err error
	if e.TicketStore, err = storage.NewTicketStore(context.Background(), db, storage.TicketStoreOptions{}); err != nil {
		tb.Fatal(err)
	}
	var ticketStore tickets.Store = e.TicketStore
	if e.Cache != nil {
		ticketStore = cache.NewTickets(e.TicketStore, e.Cache)
	}
	e.Tickets = tickets.NewService(ticketStore, e.Counters)
	o.Tickets = e.Tickets
	for _, opt := range opts {
		opt(&o)
	}
	e.Start(tb, o)
	return e
}

// Start serves o on a fresh listener.
func (e *Env) Start(tb testing.TB, o app.Options) {
	tb.Helper()
	e.App = app.New(o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go e.App.Listener(ln)
	tb.Cleanup(func() { e.App.ShutdownWithTimeout(5 * time.Second) })
	e.URL = "http://" + ln.Addr().String()
	e.Client = &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256},
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
