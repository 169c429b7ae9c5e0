package app_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
)

// The seed's load test, through the real listener: two boards, ten workers
// per board, a thousand tickets per worker. Every request must be answered
// 201 and each board must end up with exactly the numbers 1 to 10000. Its
// size is the seed's own, kept as it was asked for. It runs alone, before
// the parallel tests: beside them its 20 writers took the CPU from their
// bounded waits; patient (15 s for MySQL) keeps a loaded machine's slow
// commit from failing it.
func TestConcurrentTicketCreationNumbersEachBoardExactlyOnce(t *testing.T) {
	const boards, workers, perWorker = 2, 10, 1000
	env := apptest.New(t, patient)
	ids := make([]int64, boards)
	for i := range ids {
		ids[i] = createBoard(t, env, 1, fmt.Sprintf("LOAD%d", i)).ID
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
