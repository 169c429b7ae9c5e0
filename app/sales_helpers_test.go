package app_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
)

// valueOf reads a counter's value through the API; ok is false on 404.
func valueOf(t *testing.T, env *apptest.Env, name string) (v int64, ok bool) {
	t.Helper()
	r := env.Do(t, "GET", "/v1/counters/"+name, "")
	if r.Status == 404 {
		return 0, false
	}
	var c struct{ Value int64 }
	r.Decode(t, &c)
	return c.Value, true
}

// wantValue fails the test unless the counter exists with value want.
func wantValue(t *testing.T, env *apptest.Env, name string, want int64) {
	t.Helper()
	if got, ok := valueOf(t, env, name); !ok || got != want {
		t.Errorf("%s = %d (exists: %v), want %d", name, got, ok, want)
	}
}

// wantStatus fails the test unless r has the status (and error code, if
// code is not "").
func wantStatus(t *testing.T, r apptest.Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.ErrorCode() != code {
		t.Fatalf("got %d %s, want %d %q", r.Status, r.Body, status, code)
	}
}

// parallel runs fn(i) for i in [0, n) at once and returns each answer.
func parallel(t *testing.T, n int, fn func(i int) (apptest.Response, error)) []apptest.Response {
	t.Helper()
	out := make([]apptest.Response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i], errs[i] = fn(i)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	return out
}

// statuses counts the answers by status.
func statuses(rs []apptest.Response) map[int]int {
	m := map[int]int{}
	for _, r := range rs {
		m[r.Status]++
	}
	return m
}

// clock is a store clock that tests move forward while the service runs.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
func keyHeader(key string) string        { return "Idempotency-Key: " + key }
func batchBody(items ...string) string   { return `{"increments": [` + strings.Join(items, ", ") + `]}` }
func item(name string, by int64) string  { return fmt.Sprintf(`{"name": %q, "by": %d}`, name, by) }
func countKeys(t *testing.T, env *apptest.Env) (n int) {
	t.Helper()
	if err := env.DB.QueryRow("SELECT COUNT(*) FROM idempotency_record").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
