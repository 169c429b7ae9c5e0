package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/client"
)

// scripted is a server that answers each request with the next of its
// answers (the last one repeats), and records what it was sent.
type scripted struct {
	URL     string
	mu      sync.Mutex
	answers []func(w http.ResponseWriter)
	reqs    []*http.Request
	bodies  [][]byte
}

func newScripted(t *testing.T, answers ...func(w http.ResponseWriter)) *scripted {
	s := &scripted{answers: answers}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		i := min(len(s.reqs), len(s.answers)-1)
		s.reqs, s.bodies = append(s.reqs, r), append(s.bodies, body)
		s.mu.Unlock()
		s.answers[i](w)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *scripted) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

// answer is an answer of the contract's shape: JSON, or the error body.
func answer(status int, body string, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func apiError(status int, code string) func(w http.ResponseWriter) {
	return answer(status, fmt.Sprintf(`{"error":{"code":%q,"message":"It failed."}}`, code))
}

// dropped closes the connection without an answer.
func dropped(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// newClient is a client of url that fails the test rather than hang.
// (internal/clienttest has its twin: the client's module cannot share test
// code with the service's.)
func newClient(t *testing.T, url string, opts client.Options) (*client.Client, context.Context) {
	t.Helper()
	c, err := client.New(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c, ctx
}

var fast = client.Options{Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

// Network errors, 429, 502, 503 and 504 are retried, with one
// Idempotency-Key for the call.
func TestTransientFailuresAreRetriedWithOneIdempotencyKey(t *testing.T) {
	for name, failure := range map[string]func(w http.ResponseWriter){
		"connection dropped": dropped,
		"429":                answer(429, `{"error":{"code":"rate_limited","message":"Slow down."}}`, "Retry-After", "0"),
		"502 from a proxy":   func(w http.ResponseWriter) { w.WriteHeader(502); fmt.Fprint(w, "<html>Bad Gateway</html>") },
		"503":                apiError(503, "unavailable"),
		"504 from a proxy":   func(w http.ResponseWriter) { w.WriteHeader(504) },
	} {
		t.Run(name, func(t *testing.T) {
			s := newScripted(t, failure, failure, answer(200, `{"name":"a","value":3}`))
			c, ctx := newClient(t, s.URL, fast)
			v, err := c.Increment(ctx, "a", 3)
			if err != nil || v != 3 {
				t.Fatalf("Increment = %d, %v; want 3 after two retries", v, err)
			}
			reqs := s.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d attempts, want 3", len(reqs))
			}
			key := reqs[0].Header.Get("Idempotency-Key")
			for _, r := range reqs {
				if got := r.Header.Get("Idempotency-Key"); key == "" || got != key {
					t.Errorf("Idempotency-Key %q, want the first attempt's %q on every retry", got, key)
				}
			}
			if v2, _ := c.Increment(ctx, "a", 3); v2 != 3 || s.requests()[3].Header.Get("Idempotency-Key") == key {
				t.Error("a second call reused the first call's key")
			}
		})
	}
}

// What the service refused is not sent again, and the retries stop after
// Options.Retries.
func TestRefusalsAreNotRetriedAndRetriesAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   func(w http.ResponseWriter)
		opts     client.Options
		attempts int
		code     client.Code
	}{
		{"400", apiError(400, "invalid_argument"), fast, 1, client.InvalidArgument},
		{"409", apiError(409, "conflict"), fast, 1, client.Conflict},
		{"422", apiError(422, "out_of_range"), fast, 1, client.OutOfRange},
		{"500", apiError(500, "internal"), fast, 1, client.Internal},
		{"500 without the error body", func(w http.ResponseWriter) { w.WriteHeader(500) }, fast, 1, client.Internal},
		{"503 past the default retries", apiError(503, "unavailable"), fast, 5, client.Unavailable},
		{"503 with two retries", apiError(503, "unavailable"), client.Options{Retries: 2, Backoff: time.Millisecond}, 3, client.Unavailable},
		{"503 with retries off", apiError(503, "unavailable"), client.Options{Retries: -1}, 1, client.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScripted(t, tc.answer)
			c, ctx := newClient(t, s.URL, tc.opts)
			_, err := c.Increment(ctx, "a", 1)
			if !errors.Is(err, tc.code) {
				t.Errorf("error %v, want %s", err, tc.code)
			}
			if got := len(s.requests()); got != tc.attempts {
				t.Errorf("%d attempts, want %d", got, tc.attempts)
			}
		})
	}
}

// A creation without an idempotency key (a ticket) is sent again after a
// 429, which did nothing, but not after a 503 or a lost answer, which may
// have taken a number; nor is a secret's rotation, which may have
// replaced the secret.
func TestCreationsAreRetriedOnlyWhenNothingHappened(t *testing.T) {
	calls := []struct {
		name string
		ok   func(w http.ResponseWriter)
		call func(c *client.Client, ctx context.Context)
	}{
		{"a ticket", answer(201, `{"id":1,"board_id":1,"local_id":1,"key":"NINJA-1","title":"t","description":"","created_at":"2026-01-01T00:00:00Z"}`),
			func(c *client.Client, ctx context.Context) { c.CreateTicket(ctx, 1, "t", "") }},
		{"a rotation", answer(200, `{"id":1,"url":"https://x.example/","name":"a","thresholds":[1],"every":null,"direction":"up","created_at":"2026-01-01T00:00:00Z","disabled_at":null,"secret":"whsec_x","previous_secret_expires_at":"2026-01-02T00:00:00Z"}`),
			func(c *client.Client, ctx context.Context) { c.RotateWebhookSecret(ctx, "1") }},
	}
	for _, call := range calls {
		for _, tc := range []struct {
			name     string
			failure  func(w http.ResponseWriter)
			attempts int
		}{
			{"429", answer(429, `{"error":{"code":"rate_limited","message":"Slow down."}}`, "Retry-After", "0"), 2},
			{"503", apiError(503, "unavailable"), 1},
			{"connection dropped", dropped, 1},
		} {
			t.Run(call.name+" "+tc.name, func(t *testing.T) {
				s := newScripted(t, tc.failure, call.ok)
				c, ctx := newClient(t, s.URL, fast)
				call.call(c, ctx)
				if got := len(s.requests()); got != tc.attempts {
					t.Errorf("%d attempts, want %d", got, tc.attempts)
				}
			})
		}
	}
}

// Retry-After is honoured when the deadline leaves room for it, and when
// it does not, the call answers at once with the error it has.
func TestRetryAfterIsHonouredWithinTheDeadline(t *testing.T) {
	limited := answer(429, `{"error":{"code":"rate_limited","message":"Slow down."}}`, "Retry-After", "1")
	s := newScripted(t, limited, answer(200, `{"name":"hits/a","value":1}`))
	c, ctx := newClient(t, s.URL, fast)
	start := time.Now()
	if _, err := c.Hit(ctx, "hits/a"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("retried after %v, before the Retry-After of 1s", waited)
	}

	s = newScripted(t, answer(429, `{"error":{"code":"rate_limited","message":"Slow down."}}`, "Retry-After", "30"))
	c, _ = newClient(t, s.URL, fast)
	short, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start = time.Now()
	_, err := c.Hit(short, "hits/a")
	if !errors.Is(err, client.RateLimited) || len(s.requests()) != 1 {
		t.Errorf("error %v after %d attempts, want rate_limited after 1", err, len(s.requests()))
	}
	if time.Since(start) > 4*time.Second {
		t.Error("waited for a Retry-After past the deadline")
	}
}

// A delete whose answer was lost and whose retry finds nothing has done
// what was asked.
func TestADeleteWhoseAnswerWasLostSucceeds(t *testing.T) {
	s := newScripted(t, dropped, apiError(404, "not_found"))
	c, ctx := newClient(t, s.URL, fast)
	if err := c.Delete(ctx, "a"); err != nil {
		t.Errorf("Delete = %v, want nil: the lost attempt deleted it", err)
	}
	s = newScripted(t, apiError(404, "not_found"))
	c, _ = newClient(t, s.URL, fast)
	if err := c.Delete(ctx, "a"); !errors.Is(err, client.NotFound) {
		t.Errorf("Delete of nothing = %v, want not_found", err)
	}
}

// A name is one path segment however many slashes and spaces it has.
func TestNamesAreSentAsOnePathSegment(t *testing.T) {
	s := newScripted(t, answer(200, `{"name":"books/Red Horse Hill","value":1}`))
	c, ctx := newClient(t, s.URL+"/v1/", fast)
	if _, err := c.Increment(ctx, "books/Red Horse Hill", 1); err != nil {
		t.Fatal(err)
	}
	if got, want := s.requests()[0].RequestURI, "/v1/counters/books%2FRed%20Horse%20Hill/increment"; got != want {
		t.Errorf("sent %s, want %s", got, want)
	}
}

// An export the service ended with an error line, or that was cut, is an
// error, never a shorter export.
func TestAnExportThatDidNotFinishIsAnError(t *testing.T) {
	line := `{"name":"a","value":1,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}` + "\n"
	for _, tc := range []struct {
		name, body string
		code       client.Code
	}{
		{"an error line", line + `{"error":{"code":"unavailable","message":"MySQL went away."}}` + "\n", client.Unavailable},
		{"a cut line", line + `{"name":"b","val`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScripted(t, answer(200, tc.body))
			c, ctx := newClient(t, s.URL, fast)
			var out bytes.Buffer
			n, err := c.Export(ctx, "", &out)
			if err == nil || n != 1 || out.String() != line {
				t.Fatalf("Export = %d lines, %v, wrote %q; want an error after the one whole line", n, err, out.String())
			}
			if tc.code != "" && !errors.Is(err, tc.code) {
				t.Errorf("error %v, want %s", err, tc.code)
			}
		})
	}
}

// An import from a file or a short stream is retried with one key; a long
// stream, which cannot be read again, is sent once.
func TestImportsAreRetriedWhenTheirLinesCanBeSentAgain(t *testing.T) {
	line := `{"name":"a","value":1}` + "\n"
	report := answer(200, `{"mode":"create","atomic":false,"applied":true,"read":1,"created":1,"overwritten":0,"skipped":0,"refused":0,"lines":[],"truncated":false}`)
	for _, tc := range []struct {
		name     string
		r        io.Reader
		attempts int
	}{
		{"a seekable reader", strings.NewReader(line), 2},
		{"a short stream", struct{ io.Reader }{strings.NewReader(line)}, 2},
		{"a stream over 1 MiB", struct{ io.Reader }{strings.NewReader(strings.Repeat(line, 50_000))}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScripted(t, dropped, report)
			c, ctx := newClient(t, s.URL, fast)
			_, err := c.Import(ctx, tc.r, client.ImportOptions{})
			reqs := s.requests()
			if len(reqs) != tc.attempts || (tc.attempts == 1) != (err != nil) {
				t.Fatalf("%d attempts, error %v; want %d", len(reqs), err, tc.attempts)
			}
			if tc.attempts == 2 {
				if k := reqs[0].Header.Get("Idempotency-Key"); k == "" || k != reqs[1].Header.Get("Idempotency-Key") || !bytes.Equal(s.bodies[1], []byte(line)) {
					t.Errorf("the retry sent key %q and %q, want the first's key and lines", reqs[1].Header.Get("Idempotency-Key"), s.bodies[1])
				}
			}
		})
	}
}

// An Idempotency-Key given to the call is the one every attempt of it
// sends, for each write that takes one; it wins over the deprecated
// context form, which still works.
func TestIdempotencyKeyIsAnOptionOfTheCall(t *testing.T) {
	ok := answer(200, `{"name":"a","value":1,"counters":[],"read":1}`)
	calls := map[string]func(c *client.Client, ctx context.Context, opt ...client.CallOption) error{
		"Increment": func(c *client.Client, ctx context.Context, opt ...client.CallOption) error {
			_, err := c.Increment(ctx, "a", 1, opt...)
			return err
		},
		"Set": func(c *client.Client, ctx context.Context, opt ...client.CallOption) error {
			_, _, err := c.Set(ctx, "a", 1, client.SetOptions{}, opt...)
			return err
		},
		"Batch": func(c *client.Client, ctx context.Context, opt ...client.CallOption) error {
			_, err := c.Batch(ctx, []client.Step{{Name: "a", By: 1}}, opt...)
			return err
		},
		"Import": func(c *client.Client, ctx context.Context, opt ...client.CallOption) error {
			_, err := c.Import(ctx, strings.NewReader(`{"name":"a","value":1}`+"\n"), client.ImportOptions{}, opt...)
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				what string
				ctx  context.Context
				opt  []client.CallOption
				want string
			}{
				{"the call's key", context.Background(), []client.CallOption{client.IdempotencyKey("order-1")}, "order-1"},
				{"the context's key (deprecated)", client.WithIdempotencyKey(context.Background(), "order-2"), nil, "order-2"},
				{"the call's key wins", client.WithIdempotencyKey(context.Background(), "order-2"), []client.CallOption{client.IdempotencyKey("order-3")}, "order-3"},
			} {
				s := newScripted(t, apiError(503, "unavailable"), ok)
				c, _ := client.New(s.URL, fast)
				if err := call(c, tc.ctx, tc.opt...); err != nil {
					t.Fatalf("%s: %v", tc.what, err)
				}
				for i, r := range s.requests() {
					if got := r.Header.Get("Idempotency-Key"); got != tc.want {
						t.Errorf("%s: attempt %d sent Idempotency-Key %q, want %q", tc.what, i+1, got, tc.want)
					}
				}
			}
		})
	}
}
