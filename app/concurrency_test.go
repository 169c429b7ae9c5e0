package app_test

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
)

// 20 clients x 100 increments of one counter: every value 1..2000 is
// handed out exactly once and the counter ends at 2000. The race is in
// the 20 requests in flight at once, each client's next sent as its last
// is answered, not in the count: a thousand each (20,000 in all, ten
// seconds alone before the parallel tests) only repeated the same
// overlaps ten times over. It runs alone, before the parallel tests:
// beside them its 20 writers took the CPU from their bounded waits (a
// stream's event within a second), and it met 503s; patient (15 s for
// MySQL) keeps a loaded machine's slow commit from failing it.
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
