package apptest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// DropProxy stands between a client and the service like a load balancer
// whose connection breaks at the worst moment: it forwards a write, lets
// the service commit it, and then drops the answer (closes the client's
// connection without a word). Reads pass through.
type DropProxy struct {
	URL   string
	drops atomic.Int64

	mu   sync.Mutex
	keys []string // the Idempotency-Key of each write that reached it
}

// NewDropProxy starts a proxy in front of the service that drops the
// answers of its next drops writes (requests other than GET and HEAD).
func (e *Env) NewDropProxy(tb testing.TB, drops int) *DropProxy {
	tb.Helper()
	target, err := url.Parse(e.URL)
	if err != nil {
		tb.Fatal(err)
	}
	// Rewrite, unlike Director, adds no X-Forwarded-For: the service then
	// sees a loopback client, as the tests' other requests are.
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	p := &DropProxy{}
	p.drops.Store(int64(drops))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			rp.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		p.keys = append(p.keys, r.Header.Get("Idempotency-Key"))
		p.mu.Unlock()
		if p.drops.Add(-1) < 0 {
			rp.ServeHTTP(w, r)
			return
		}
		rp.ServeHTTP(httptest.NewRecorder(), r) // the service answers, and commits first
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err) // an HTTP/1.1 test server can always be hijacked
		}
		conn.Close()
	}))
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Keys returns the Idempotency-Key of each write that reached the proxy,
// in order ("" for one sent without).
func (p *DropProxy) Keys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.keys...)
}
