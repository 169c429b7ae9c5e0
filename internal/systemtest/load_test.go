package systemtest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/wire"
)

// The load tests of the whole service through its real listener. They run
// here, not in app/, because each is twenty clients sending thousands of requests
// under the race detector: in app/ they ran alone before app's
// parallel tests and lengthened the longest package of the suite, while
// this package runs beside it. They run one after the other, before this
// package's parallel tests, whose bounded waits they would starve.

// patient gives MySQL calls 15 s: a loaded machine's slow commit answered
// 503 is not what a load test looks at.
func patient(c *wire.Config) { c.MySQL.Timeout = 15 * time.Second }

// 20 clients x 100 increments of one counter, each client's next sent as
// its last is answered: every value 1..2000 is handed out exactly once
// and the counter ends at 2000. The race is in the 20 requests in flight
// at once, not in the count: a thousand each only repeated the same
// overlaps ten times over.
func TestConcurrentIncrementsHandOutEachValueOnce(t *testing.T) {
	const workers, each = 20, 100
	e := apptest.New(t, patient)
	values := make([][]int64, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r, err := e.TryDo("POST", "/v1/counters/hot%2Fone/increment", "")
				if err != nil {
					errs <- err
					return
				}
				var got struct{ Value int64 }
				if r.Status != 200 || json.Unmarshal(r.Body, &got) != nil {
					t.Errorf("status %d body %s", r.Status, r.Body)
					return
				}
				values[w] = append(values[w], got.Value)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := make([]bool, workers*each+1)
	for _, vs := range values {
		for _, v := range vs {
			if v < 1 || v > workers*each || seen[v] {
				t.Fatalf("value %d out of range or handed out twice", v)
			}
			seen[v] = true
		}
	}
	for v := 1; v <= workers*each; v++ {
		if !seen[v] {
			t.Fatalf("value %d never handed out", v)
		}
	}
	r := e.Do(t, "GET", "/v1/counters/hot%2Fone", "")
	var got struct{ Value int64 }
	r.Decode(t, &got)
	if got.Value != workers*each {
		t.Fatalf("final value %d, want %d", got.Value, workers*each)
	}
}

// The seed's load test: two boards, ten workers per board, a thousand
// tickets per worker. Every request must be answered 201 and each board
// must end up with exactly the numbers 1 to 10000.
func TestConcurrentTicketCreationNumbersEachBoardExactlyOnce(t *testing.T) {
	const boards, workers, perWorker = 2, 10, 1000
	env := apptest.New(t, patient)
	ids := make([]int64, boards)
	for i := range ids {
		ids[i] = createBoard(t, env, fmt.Sprintf("LOAD%d", i))
	}

	start := time.Now()
	var wg sync.WaitGroup
	failures := make(chan string, boards*workers)
	for _, board := range ids {
		path := fmt.Sprintf("/v1/boards/%d/tickets", board)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWorker {
					r, err := env.TryDo("POST", path, fmt.Sprintf(`{"title": "worker %d ticket %d"}`, w, i))
					if err != nil || r.Status != 201 {
						failures <- fmt.Sprintf("board %d worker %d ticket %d: %v %d %s", board, w, i, err, r.Status, r.Body)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	if t.Failed() {
		t.FailNow()
	}
	stats := env.TicketStore.InsertStats()
	t.Logf("%d tickets in %v; %d INSERT statements", boards*workers*perWorker, time.Since(start).Round(time.Millisecond), stats.Groups)

	rows, err := env.DB.Query("SELECT board_id, MAX(local_id), COUNT(*), COUNT(DISTINCT local_id), MIN(local_id) FROM ticket GROUP BY board_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var board, maxID, count, distinct, minID int64
		if err := rows.Scan(&board, &maxID, &count, &distinct, &minID); err != nil {
			t.Fatal(err)
		}
		seen++
		if want := int64(workers * perWorker); minID != 1 || maxID != want || count != want || distinct != want {
			t.Errorf("board %d: numbers %d..%d, %d rows, %d distinct; want exactly 1..%d", board, minID, maxID, count, distinct, want)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen != boards {
		t.Fatalf("tickets on %d boards, want %d", seen, boards)
	}
}

func createBoard(tb testing.TB, env *apptest.Env, slug string) int64 {
	tb.Helper()
	r := env.Do(tb, "POST", "/v1/boards", fmt.Sprintf(`{"company_id": 1, "slug": %q, "title": "Board %s"}`, slug, slug))
	if r.Status != 201 {
		tb.Fatalf("creating board %s: %d %s", slug, r.Status, r.Body)
	}
	var b struct {
		ID int64 `json:"id"`
	}
	r.Decode(tb, &b)
	return b.ID
}
