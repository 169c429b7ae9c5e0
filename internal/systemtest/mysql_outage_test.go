package systemtest_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// MySQL killed under load: requests fail fast with 503 unavailable (never
// 500, never a hang), /readyz says so, and the service recovers by itself
// when MySQL is back. Acknowledged increments are never lost, and none is
// applied twice: each counter ends between its acknowledged increments and
// those plus the 503s (which say they may or may not have been applied),
// and its history counts exactly what its value holds.
// Both coalesced paths are driven: one hot counter, and many counters that
// share multi-row statements; and labelled increments, whose labels commit
// with their steps: each counter's breakdown by a label that every step
// carried adds up to its value, with no "(none)".
func TestMySQLOutageGives503AndRecovers(t *testing.T) {
	t.Parallel()
	for _, load := range []struct {
		name              string
		workers, counters int
		labelled          bool
	}{
		{"one hot counter", 4, 1, false},
		{"many counters", 16, 40, false},
		{"labelled, one hot counter", 4, 1, true},
		{"labelled, many counters", 16, 40, true},
	} {
		t.Run(load.name, func(t *testing.T) {
			t.Parallel() // each on a MariaDB of its own
			testMySQLOutage(t, load.workers, load.counters, load.labelled)
		})
	}
}

func testMySQLOutage(t *testing.T, workers, counters int, labelled bool) {
	m := testenv.StartMariaDB(t)
	e := apptest.NewWithDSN(t, m.DSN("outage"), func(c *wire.Config) { c.MySQL.Timeout = 2 * time.Second })

	acked := make([]atomic.Int64, counters)
	maybe := make([]atomic.Int64, counters)
	var maxLatency atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c := i % counters
				body := ""
				if labelled {
					body = `{"labels": {"channel": "c` + strconv.Itoa(i%3) + `", "worker": "w` + strconv.Itoa(w) + `"}}`
				}
				start := time.Now()
				r, err := e.TryDo("POST", "/v1/counters/load"+strconv.Itoa(c)+"/increment", body)
				if d := int64(time.Since(start)); d > maxLatency.Load() {
					maxLatency.Store(d)
				}
				switch {
				case err != nil:
					t.Errorf("transport error: %v", err)
					return
				case r.Status == 200:
					acked[c].Add(1)
				case r.Status == 503 && r.ErrorCode() == "unavailable":
					maybe[c].Add(1)
					if strings.Contains(strings.ToLower(string(r.Body)), "sql") || strings.Contains(string(r.Body), "dial") {
						t.Errorf("503 leaks driver text: %s", r.Body)
					}
					time.Sleep(10 * time.Millisecond)
				default:
					t.Errorf("unexpected %d %s", r.Status, r.Body)
					return
				}
			}
		}()
	}

	time.Sleep(300 * time.Millisecond)
	m.Kill()
	down := time.Now()
	var saw503 bool
	for time.Since(down) < 10*time.Second {
		r := e.Do(t, "GET", "/v1/counters/load0", "")
		if r.Status == 503 {
			saw503 = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !saw503 {
		t.Fatal("no 503 within 10 s of MySQL being killed")
	}
	if r := e.Do(t, "GET", "/readyz", ""); r.Status != 503 || !strings.Contains(string(r.Body), `"mysql":"down"`) {
		t.Fatalf("/readyz while down: %d %s", r.Status, r.Body)
	}
	time.Sleep(time.Second)
	m.Start(t)
	e.WaitRecovered(t, "/v1/counters/after/increment")
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	if r := e.Do(t, "GET", "/readyz", ""); r.Status != 200 {
		t.Fatalf("/readyz after recovery: %d %s", r.Status, r.Body)
	}
	if d := time.Duration(maxLatency.Load()); d > 5*time.Second {
		t.Errorf("slowest request took %v; a dead database must fail fast", d)
	}
	var totalAcked, totalMaybe int64
	for c := range counters {
		// No row: none of the counter's increments was applied (on a busy
		// machine the workers may not reach every counter before the kill).
		// Each read has 5 s of its own: one 5 s for all forty ran out at
		// load 15.
		var stored int64
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := e.DB.QueryRowContext(ctx, "SELECT value FROM counter WHERE name = ?", "load"+strconv.Itoa(c)).Scan(&stored)
		cancel()
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		a, mb := acked[c].Load(), maybe[c].Load()
		if stored < a || stored > a+mb {
			t.Errorf("load%d: stored %d, want between %d acknowledged and %d with every 503 applied", c, stored, a, a+mb)
		}
		// History commits with the value: it holds exactly the increments
		// the value holds, acknowledged or in doubt, never one more.
		if err != nil {
			continue
		}
		var h struct{ Total int64 }
		if r := e.Do(t, "GET", "/v1/counters/load"+strconv.Itoa(c)+"/history?step=month", ""); r.Status != 200 {
			t.Fatalf("history of load%d: %d %s", c, r.Status, r.Body)
		} else if r.Decode(t, &h); h.Total != stored {
			t.Errorf("load%d: history counts %d, the value is %d", c, h.Total, stored)
		}
		if labelled {
			checkLabelsAddUp(t, e, "load"+strconv.Itoa(c), stored)
		}
		totalAcked += a
		totalMaybe += mb
	}
	t.Logf("acknowledged %d, 503 %d, slowest request %v", totalAcked, totalMaybe, time.Duration(maxLatency.Load()))
}

// A hung MySQL (the process stopped, connections open, nothing answering)
// costs a request its deadline, not more: 503 unavailable, then recovery
// when MySQL answers again, with nothing acknowledged lost.
func TestHungMySQLGives503WithinTheDeadlineAndRecovers(t *testing.T) {
	t.Parallel()
	m := testenv.StartMariaDB(t)
	const deadline = time.Second
	e := apptest.NewWithDSN(t, m.DSN("hung"), func(c *wire.Config) { c.MySQL.Timeout = deadline })
	if r := e.Do(t, "POST", "/v1/counters/h/increment", ""); r.Status != 200 {
		t.Fatalf("before: %d %s", r.Status, r.Body)
	}
	m.Freeze()
	thawed := false
	defer func() {
		if !thawed {
			m.Thaw()
		}
	}()
	var wg sync.WaitGroup
	type outcome struct {
		status int
		took   time.Duration
	}
	results := make(chan outcome, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			method, path := "POST", "/v1/counters/h/increment"
			if i%2 == 1 {
				method, path = "GET", "/v1/counters/h"
			}
			start := time.Now()
			r, err := e.TryDo(method, path, "")
			if err != nil {
				t.Error(err)
				return
			}
			results <- outcome{r.Status, time.Since(start)}
		}(i)
	}
	wg.Wait()
	close(results)
	for o := range results {
		if o.status != 503 {
			t.Errorf("status %d while MySQL hangs, want 503", o.status)
		}
		if o.took > deadline+2*time.Second {
			t.Errorf("a request took %v with a %v deadline", o.took, deadline)
		}
	}
	m.Thaw()
	thawed = true
	e.WaitRecovered(t, "/v1/counters/h/increment")
}

// checkLabelsAddUp checks that the breakdowns of name by the labels every
// step carried add up to its value, with no step left unlabelled.
func checkLabelsAddUp(t *testing.T, e *apptest.Env, name string, stored int64) {
	t.Helper()
	for _, by := range []string{"channel", "worker"} {
		var b struct {
			Total, More int64
			Rows        []struct {
				Value string
				Count int64
			}
		}
		r := e.Do(t, "GET", "/v1/counters/"+name+"/breakdown?by="+by, "")
		if r.Status != 200 {
			t.Fatalf("breakdown of %s: %d %s", name, r.Status, r.Body)
		}
		r.Decode(t, &b)
		sum := b.More
		for _, row := range b.Rows {
			sum += row.Count
			if row.Value == "(none)" {
				t.Errorf("%s by %s: %d steps counted without their label", name, by, row.Count)
			}
		}
		if b.Total != stored || sum != stored {
			t.Errorf("%s by %s: total %d, rows %d; the value is %d", name, by, b.Total, sum, stored)
		}
	}
}
