package app_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
)

// Bodies over the limit sent at full speed, announced or chunked, 1 MiB
// and 10 MiB, 20 of each, five at a time: every client reads its 413
// payload_too_large and none meets a reset, neither while it sends nor
// while it reads. Each upload meets the moment a reset would come (the
// server answers before the body's end), so 20 of each (50 before) test
// it as well. The service drains a body for at most five seconds after
// its answer (app/body.go's drainTime): an upload that a starved machine
// stretched past that may be cut, and is logged; one cut sooner fails.
func TestBodiesOverTheLimitSentAtFullSpeedAreAnswered413NotReset(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	host := strings.TrimPrefix(e.URL, "http://")
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
	}{
		{"1 MiB announced", 1 << 20, false},
		{"10 MiB announced", 10 << 20, false},
		{"1 MiB chunked", 1 << 20, true},
		{"10 MiB chunked", 10 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(`{"by": 1, "pad": "` + strings.Repeat("x", tc.size) + `"}`)
			var wg sync.WaitGroup
			sem := make(chan struct{}, 5)
			for i := range 20 {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					start := time.Now()
					err := uploadOnce(host, body, tc.chunked)
					var cut *sendError
					switch {
					case errors.As(err, &cut) && time.Since(start) >= serverDrainTime:
						t.Logf("upload %d: cut after %v, past the service's drain time: %v", i+1, time.Since(start).Round(time.Millisecond), err)
					case err != nil:
						t.Errorf("upload %d after %v: %v", i+1, time.Since(start).Round(time.Millisecond), err)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// uploadOnce sends body as a client does that writes its whole request
// before it reads, and reads the answer while it writes; it returns nil
// for a 413 payload_too_large read to its end with no error either way.
func uploadOnce(host string, body []byte, chunked bool) error {
	conn, err := net.Dial("tcp", host)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	wrote := make(chan error, 1)
	go func() {
		head := "POST /v1/counters/big/increment HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n"
		if !chunked {
			_, err := io.WriteString(conn, head+fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)))
			if err == nil {
				_, err = conn.Write(body)
			}
			wrote <- err
			return
		}
		_, err := io.WriteString(conn, head+"Transfer-Encoding: chunked\r\n\r\n")
		for rest := body; err == nil && len(rest) > 0; {
			n := min(len(rest), 32<<10)
			_, err = fmt.Fprintf(conn, "%x\r\n%s\r\n", n, rest[:n])
			rest = rest[n:]
		}
		if err == nil {
			_, err = io.WriteString(conn, "0\r\n\r\n")
		}
		wrote <- err
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("reading the answer's body: %w", err)
	}
	var e struct{ Error struct{ Code string } }
	json.Unmarshal(b, &e)
	if res.StatusCode != 413 || e.Error.Code != "payload_too_large" {
		return fmt.Errorf("answered %d %s, want 413 payload_too_large", res.StatusCode, b)
	}
	if err := <-wrote; err != nil {
		return &sendError{err}
	}
	return nil
}

// serverDrainTime is app/body.go's drainTime: how long the service reads
// and drops the rest of a body it answered early.
const serverDrainTime = 5 * time.Second

// sendError is a body's send failing after its 413 was read.
type sendError struct{ err error }

func (e *sendError) Error() string { return "sending the body: " + e.err.Error() }
func (e *sendError) Unwrap() error { return e.err }

// A body that is not text (bytes that are not UTF-8, or a \u escape of half
// a surrogate pair, which encoding/json would turn into U+FFFD) is 400 and
// changes nothing: not a counter named with U+FFFD, not a reset of one
// that exists, not a label counted as U+FFFD. Escapes of whole
// characters, U+FFFD itself and an escaped backslash before "u" are text.
func TestABodyThatIsNotTextIsRefusedAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	p := own()                                                      // put before each "bn" of the table
	e.Do(t, "PUT", "/v1/counters/"+p+"bn%EF%BF%BD", `{"value": 5}`) // "bn\uFFFD": a real counter
	tests := []struct {
		name, method, path, body string
		status                   int
	}{
		{"a name's byte that is not UTF-8", "POST", "/v1/counters/batch", "{\"increments\": [{\"name\": \"bn\xff\", \"by\": 1}]}", 400},
		{"a lone second half", "POST", "/v1/counters/batch", `{"increments": [{"name": "bn\udc00", "by": 1}]}`, 400},
		{"a first half without its second", "POST", "/v1/counters/reset", `{"prefix": "bn\ud800", "value": 0}`, 400},
		{"a first half before another first half", "POST", "/v1/counters/reset", `{"prefix": "bn\ud800\ud800", "value": 0}`, 400},
		{"a first half at the end", "POST", "/v1/counters/reset", `{"prefix": "bn\ud800`, 400},
		{"a prefix's byte that is not UTF-8", "POST", "/v1/counters/reset", "{\"prefix\": \"bn\xff\", \"value\": 0}", 400},
		{"a label's value", "POST", "/v1/counters/bn%EF%BF%BD/increment", `{"by": 1, "labels": {"a": "\ud800"}}`, 400},
		{"a whole pair is text", "POST", "/v1/counters/batch", `{"increments": [{"name": "bn\ud83d\ude00", "by": 1}]}`, 200},
		{"an escaped backslash before u is text", "POST", "/v1/counters/batch", `{"increments": [{"name": "bn\\ud800", "by": 1}]}`, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := strings.Replace(tc.path, "/v1/counters/bn", "/v1/counters/"+p+"bn", 1)
			body := strings.ReplaceAll(tc.body, `"bn`, `"`+p+"bn")
			r := e.Do(t, tc.method, path, body, "Content-Type: application/json")
			if r.Status != tc.status {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, tc.status)
			}
			if tc.status == 400 && r.ErrorCode() != "invalid_argument" {
				t.Fatalf("error %s, want invalid_argument", r.Body)
			}
		})
	}
	if r := e.Do(t, "GET", "/v1/counters/"+p+"bn%EF%BF%BD", ""); !strings.Contains(string(r.Body), `"value":5`) {
		t.Errorf("a refused body changed the counter named with U+FFFD: %s", r.Body)
	}
}
