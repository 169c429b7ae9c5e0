package apptest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// Failure is how a FirstFailProxy fails a write's first attempt.
type Failure int

// The failures a client meets between it and the service. Those that
// come after the service committed the write are the ones a retry
// without the same Idempotency-Key would count twice.
const (
	// FailDrop forwards the write, lets the service commit it, and closes
	// the client's connection without a word, as DropProxy does.
	FailDrop Failure = iota
	// Fail429 answers 429 with Retry-After: 0 and the API's error body;
	// the service never sees the write.
	Fail429
	// Fail502 forwards the write and answers a load balancer's 502 page
	// instead of the service's answer.
	Fail502
	// Fail503 answers the API's 503; the service never sees the write.
	Fail503
	// Fail504 forwards the write and answers a bare 504, as a load
	// balancer that gave up waiting does.
	Fail504
)

// FirstFailProxy stands between a client and the service and fails the
// first attempt of every write (a request other than GET and HEAD that
// carries an Idempotency-Key), its failures taking turns; the write's
// later attempts, reads and writes without a key pass through. A client
// that retries with the same key then counts each write exactly once.
type FirstFailProxy struct {
	URL string

	mu       sync.Mutex
	next     int
	attempts map[string]int // of each Idempotency-Key
}

// NewFirstFailProxy starts a proxy in front of the service that fails
// the first attempt of each write with failures, in turn.
func (e *Env) NewFirstFailProxy(tb testing.TB, failures ...Failure) *FirstFailProxy {
	tb.Helper()
	return e.newFailProxy(tb, false, failures)
}

// NewEachAttemptFailProxy starts a proxy in front of the service that
// answers the attempts of each write (told apart by its Idempotency-Key; a
// write without one counts as the key "") with every one of failures, in
// order, and forwards the attempt after them; a key sent again after that
// meets them all again. A client that reuses its key on every attempt
// reaches it a multiple of len(failures)+1 times per key.
func (e *Env) NewEachAttemptFailProxy(tb testing.TB, failures ...Failure) *FirstFailProxy {
	tb.Helper()
	return e.newFailProxy(tb, true, failures)
}

func (e *Env) newFailProxy(tb testing.TB, eachAttempt bool, failures []Failure) *FirstFailProxy {
	tb.Helper()
	if len(failures) == 0 {
		tb.Fatal("a failing proxy needs failures to answer with")
	}
	target, err := url.Parse(e.URL)
	if err != nil {
		tb.Fatal(err)
	}
	// Rewrite adds no X-Forwarded-For: the service sees a loopback client.
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	p := &FirstFailProxy{attempts: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if r.Method == http.MethodGet || r.Method == http.MethodHead || (key == "" && !eachAttempt) {
			rp.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		n := p.attempts[key]
		p.attempts[key]++
		var pass bool
		var f Failure
		if eachAttempt {
			i := n % (len(failures) + 1)
			if pass = i == len(failures); !pass {
				f = failures[i]
			}
		} else if pass = n > 0; !pass {
			f = failures[p.next%len(failures)]
			p.next++
		}
		p.mu.Unlock()
		if pass {
			rp.ServeHTTP(w, r)
			return
		}
		switch f {
		case FailDrop:
			rp.ServeHTTP(httptest.NewRecorder(), r) // the service answers, and commits first
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err) // an HTTP/1.1 test server can always be hijacked
			}
			conn.Close()
		case Fail429:
			w.Header().Set("Retry-After", "0")
			apiError(w, http.StatusTooManyRequests, "rate_limited", "Too many requests; retry after 0 seconds.")
		case Fail503:
			apiError(w, http.StatusServiceUnavailable, "unavailable", "The database cannot be reached; nothing was changed.")
		case Fail502:
			rp.ServeHTTP(httptest.NewRecorder(), r)
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
		case Fail504:
			rp.ServeHTTP(httptest.NewRecorder(), r)
			w.WriteHeader(http.StatusGatewayTimeout)
		}
	}))
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func apiError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%q,"message":%q}}`, code, message)
}

// Attempts returns how many attempts of each Idempotency-Key reached the
// proxy.
func (p *FirstFailProxy) Attempts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.attempts))
	for k, n := range p.attempts {
		out[k] = n
	}
	return out
}
